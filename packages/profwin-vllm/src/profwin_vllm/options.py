"""``options.vllm`` of a spec: the attrs class and its one reader (pure: no vLLM needed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from profwin.plugin import ProfileSpec, choice, flag, parse_options

__all__ = ["PLATFORMS", "VllmOptions", "options_of"]

PLATFORMS: tuple[str, ...] = ("cpu", "cuda", "rocm", "xpu", "ascend")
"""vLLM platforms whose accepted profiler activities profwin knows."""


@frozen(kw_only=True)
class VllmOptions:
    """``options.vllm`` of a spec.

    Attributes:
        frontend: also run the AsyncLLM (API-server) CPU profiler. Off by default because that
            profiler ignores ``delay_iterations``/``max_iterations`` and records the whole
            session, which is the trace a window exists to avoid (vLLM PR #28987).
        gzip: write ``.pt.trace.json.gz`` (vLLM's default) rather than plain JSON.
        platform: the engine's platform (``cpu``, ``cuda``, ``rocm``, ``xpu``, ``ascend``), when
            known, to check activities before launch; ``None`` lets vLLM check at worker start.
    """

    frontend: bool = field(default=False, validator=flag)
    gzip: bool = field(default=True, validator=flag)
    platform: str | None = field(default=None, validator=choice(None, *PLATFORMS))


def options_of(source: ProfileSpec | Mapping[str, Any]) -> VllmOptions:
    """``options.vllm`` of a spec (or that mapping), validated by core's ``parse_options``;
    errors name ``options.vllm.<key>``."""
    return parse_options(VllmOptions, source, "vllm")
