"""What each SGLang version's profiler accepts, and how profwin finds out which version it talks to.

Only 0.5.23 has been read line by line and run (shared/reference/sglang.md, the integration
tests); what is said of older versions comes from upstream history and is handled conservatively.
"""

from __future__ import annotations

from attrs import frozen

from profwin.plugin import checked
from profwin.plugin.engines import EngineVersion, installed_version
from profwin_sglang.server_plugin import FIRST_VERSION, HOOK_PACKAGE

__all__ = ["VERIFIED_VERSION", "Features", "features", "plugin_inactive_reason", "sglang_version"]

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


@checked
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


def plugin_inactive_reason(version: str | None) -> str:
    """Why a running SGLang server of ``version`` does not report profwin's server plugin.

    Only the server knows for sure (its log has register()'s warning); the version tells the
    one case that no installation fixes.
    """
    if version is not None:
        try:
            older = EngineVersion.parse(version) < FIRST_VERSION
        except ValueError:
            older = False
        if older:
            return (
                f"SGLang {version} is older than {FIRST_VERSION}, the first release the server plugin hooks into "
                f"(0.5.12 has no {HOOK_PACKAGE})"
            )
    return (
        "the server does not report it: profwin-sglang is not installed in the server's environment, "
        "SGLANG_PLUGINS leaves it out, or the server was started before it was installed"
    )
