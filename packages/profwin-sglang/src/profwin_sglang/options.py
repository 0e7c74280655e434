"""``options.sglang`` of a spec: the attrs class and its one reader (pure: no sglang import)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from profwin.plugin import ProfileSpec, checked, choice, flag, names, parse_options

__all__ = ["PROFILERS", "SGLANG_ACTIVITIES", "START_MODES", "SglangOptions", "options_of"]

SGLANG_ACTIVITIES: tuple[str, ...] = ("CPU", "GPU", "XPU", "MEM", "CUDA_PROFILER", "RPD")
"""Every activity name SGLang 0.5.23's profiler recognises (others are silently dropped there)."""

START_MODES: tuple[str, ...] = ("auto", "relative", "trim")
"""Values of the ``start`` option: choose, require the server plugin, or force trimming."""

PROFILERS: tuple[str, ...] = ("auto", "v1", "v2")
"""Values of the ``profiler`` option: ask the server, or say which profiler it runs."""


def _tuple(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


@frozen(kw_only=True)
class SglangOptions:
    """The ``options.sglang`` block of a spec.

    Attributes:
        start: ``auto`` (default), ``relative`` (require the server plugin) or ``trim``; see
            :mod:`profwin_sglang.window`.
        by_stage: SGLang's ``profile_by_stage``: the first N prefill and N decode batches, two files.
        merge_profiles: ask rank 0 to merge the per-rank traces into ``merged-{profile_id}``.
        cuda_profiler: also send ``CUDA_PROFILER`` (cudaProfilerStart/Stop for nsys).
        detailed_annotations: SGLang's KV aggregates in the ``step[...]`` span names.
        activities: raw SGLang activity names, replacing the ones derived from the spec (SGLang
            would silently drop a name it does not know).
        profiler: which profiler the server runs: ``auto`` (default) asks it (its profwin plugin,
            or its environment when started with ``SGLANG_EXPOSE_OWN_ENV_VARS=1``); ``v1`` (the
            classic one) or ``v2`` (``SGLANG_PROFILE_V2=1``) say it for servers that cannot.
    """

    start: str = field(default="auto", validator=choice(*START_MODES))
    by_stage: bool = field(default=False, validator=flag)
    merge_profiles: bool = field(default=False, validator=flag)
    cuda_profiler: bool = field(default=False, validator=flag)
    detailed_annotations: bool = field(default=False, validator=flag)
    activities: tuple[str, ...] | None = field(default=None, converter=_tuple, validator=names(*SGLANG_ACTIVITIES))
    profiler: str = field(default="auto", validator=choice(*PROFILERS))


@checked
def options_of(source: ProfileSpec | Mapping[str, Any]) -> SglangOptions:
    """``options.sglang`` of a spec (or that mapping), validated by core's ``parse_options``;
    errors name ``options.sglang.<key>``."""
    return parse_options(SglangOptions, source, "sglang")
