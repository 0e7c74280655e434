"""What each SGLang version's profiler accepts, and how profwin finds out which version it talks to.

Only 0.5.23 has been read line by line and run (shared/reference/sglang.md, the integration
tests); what is said of older versions comes from upstream history and is handled conservatively.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version

from attrs import frozen

from profwin.errors import ConfigError

__all__ = ["VERIFIED_VERSION", "Features", "features", "installed_version", "parse_version"]

VERIFIED_VERSION = (0, 5, 23)
"""The release whose profiler code profwin-sglang was written against and tested on."""

_VERSION = re.compile(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


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

    version: tuple[int, int, int] | None
    req_type: bool
    client_profile_id: bool
    exact_immediate: bool
    server_info_path: str

    @property
    def label(self) -> str:
        return "unknown" if self.version is None else ".".join(map(str, self.version))


def parse_version(text: str) -> tuple[int, int, int]:
    """``"0.5.23"``, ``"v0.5.23.post1"``, ``"0.5.23rc0"`` -> ``(0, 5, 23)``."""
    match = _VERSION.match(str(text))
    if not match:
        raise ConfigError(f"must look like 0.5.23 (got {text!r})", path="engine_version")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def installed_version() -> str | None:
    """The version of the ``sglang`` distribution installed here, or ``None``."""
    try:
        return dist_version("sglang")
    except PackageNotFoundError:
        return None


def features(version: str | tuple[int, int, int] | None) -> Features:
    """The profiler behaviour of ``version``; ``None`` means "not known", treated as the newest."""
    parsed = parse_version(version) if isinstance(version, str) else version
    current = parsed is None or parsed >= VERIFIED_VERSION
    return Features(
        version=parsed,
        req_type=current,
        client_profile_id=current,
        exact_immediate=current,
        server_info_path="/server_info" if current else "/get_server_info",
    )
