"""profwin as a drop-in for verl's rollout profiling (verl 0.9.x), importable without verl or any engine.

- Reading verl's configs with verl's meaning: :func:`load_verl` -> :class:`VerlProfiling`,
  :func:`spec_from_verl`, and ``profwin.load_spec(path, at="actor_rollout_ref.rollout.profiler")``.
- verl's seams with verl's signatures, exact windows: :func:`build_vllm_profiler_args`,
  :func:`build_sglang_profiler_args`, :func:`rollout_trace_dir`,
  :func:`rollout_profiler_global_ranks`, :func:`rollout_trace_local_rank`,
  :func:`relocate_rollout_traces`.
- :func:`enable` / :func:`disable`: put them in place of verl's, wherever verl imported them
  (``VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch`` calls ``enable`` in every verl process);
  :func:`records`, every trainer integration's, stays empty: verl starts and stops its engines itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin_verl.builders import build_sglang_profiler_args, build_vllm_profiler_args
    from profwin_verl.seam import INTEGRATION, NAMES, disable, enable, records
    from profwin_verl.settings import TOOL_PLUGINS, ProfilingDisabled, VerlProfiling, load_verl, spec_from_verl
    from profwin_verl.traces import (
        relocate_rollout_traces,
        rollout_profiler_global_ranks,
        rollout_trace_dir,
        rollout_trace_local_rank,
    )

__all__ = [
    "INTEGRATION",
    "NAMES",
    "TOOL_PLUGINS",
    "ProfilingDisabled",
    "VerlProfiling",
    "build_sglang_profiler_args",
    "build_vllm_profiler_args",
    "disable",
    "enable",
    "load_verl",
    "records",
    "relocate_rollout_traces",
    "rollout_profiler_global_ranks",
    "rollout_trace_dir",
    "rollout_trace_local_rank",
    "spec_from_verl",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin_verl.builders": ("build_sglang_profiler_args", "build_vllm_profiler_args"),
        "profwin_verl.seam": ("INTEGRATION", "NAMES", "disable", "enable", "records"),
        "profwin_verl.settings": ("TOOL_PLUGINS", "ProfilingDisabled", "VerlProfiling", "load_verl", "spec_from_verl"),
        "profwin_verl.traces": (
            "relocate_rollout_traces",
            "rollout_profiler_global_ranks",
            "rollout_trace_dir",
            "rollout_trace_local_rank",
        ),
    },
)
