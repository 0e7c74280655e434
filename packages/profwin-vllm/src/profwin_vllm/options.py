"""``options.vllm`` of a spec: the attrs class and its one reader (pure: no vLLM needed)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from profwin.plugin import ProfileSpec, choice, flag, parse_options

__all__ = ["PLATFORMS", "PROFILERS", "PROTON_DATA", "VllmOptions", "options_of"]

PLATFORMS: tuple[str, ...] = ("cpu", "cuda", "rocm", "xpu", "ascend")
"""vLLM platforms whose accepted profiler activities profwin knows."""

PROFILERS: tuple[str, ...] = ("torch", "cuda", "proton")
"""vLLM's profiler kinds (``ProfilerConfig.profiler``): which ones a version has is
:data:`profwin_vllm.fields.PROFILER_KINDS`."""

PROTON_DATA: tuple[str, ...] = ("tree", "trace")
"""Proton's output types: a Hatchet tree (``.hatchet``) or a Chrome trace (``.chrome_trace``)."""


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
        profiler: vLLM's profiler for the window: ``torch`` (traces profwin reads), ``cuda``
            (``cudaProfilerStart``/``Stop`` at the window's edges, for ``nsys profile
            --capture-range=cudaProfilerApi``) or ``proton`` (Triton Proton, vLLM >= 0.28).
        proton_data: Proton's output, ``tree`` (Hatchet) or ``trace`` (Chrome trace); only with
            ``profiler: proton``.
    """

    frontend: bool = field(default=False, validator=flag)
    gzip: bool = field(default=True, validator=flag)
    platform: str | None = field(default=None, validator=choice(None, *PLATFORMS))
    profiler: str = field(default="torch", validator=choice(*PROFILERS))
    proton_data: str | None = field(default=None, validator=choice(None, *PROTON_DATA))


def options_of(source: ProfileSpec | Mapping[str, Any]) -> VllmOptions:
    """``options.vllm`` of a spec (or that mapping), validated by core's ``parse_options``;
    errors name ``options.vllm.<key>``."""
    return parse_options(VllmOptions, source, "vllm")
