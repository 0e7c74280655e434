"""What each SGLang version's profiler accepts, and how profwin finds out which version it talks to.

Only 0.5.23 has been read line by line and run (shared/reference/sglang.md, the integration
tests); what is said of older versions comes from upstream history and is handled conservatively.
"""

from __future__ import annotations

from attrs import frozen

from profwin.plugin import EngineVersion, installed_version

__all__ = ["VERIFIED_VERSION", "Features", "features", "sglang_version"]

VERIFIED_VERSION = EngineVersion.parse("0.5.23")
"""The release whose profiler code profwin-sglang was written against and tested on."""


@frozen
class Features:
    """Profiler behaviour that differs between SGLang versions.

    Attributes:
        version: the version these features describe (``None``: unknown, assume the newest).
        req_type: ``ProfileReq(req_type=...)`` is the request object everywhere (0.5.23) rather than
            ``ProfileReqInput`` plus keyword-style ``TokenizerManager.start_profile(**kw)`` (older).
        client_profile_id: the server keeps a ``profile_id`` sent by the client, so file names are
            known in advance; older servers name files by their own ``time.time()``.
        exact_immediate: immediate mode (no ``start_step``) records exactly ``num_steps`` batches;
            before SGLang PR #30215 it recorded one fewer.
        server_info_path: the endpoint with ``version`` and ``internal_states``.
    """

    version: EngineVersion | None
    req_type: bool
    client_profile_id: bool
    exact_immediate: bool
    server_info_path: str

    @property
    def label(self) -> str:
        return "unknown" if self.version is None else str(self.version)


def sglang_version() -> str | None:
    """The version of the ``sglang`` distribution installed here, or ``None`` (never imports it)."""
    return installed_version("sglang", ("sglang",))


def features(version: str | EngineVersion | None) -> Features:
    """The profiler behaviour of ``version``; ``None`` means "not known", treated as the newest."""
    parsed = None if version is None else EngineVersion.parse(version)
    current = parsed is None or parsed >= VERIFIED_VERSION
    return Features(
        version=parsed,
        req_type=current,
        client_profile_id=current,
        exact_immediate=current,
        server_info_path="/server_info" if current else "/get_server_info",
    )
