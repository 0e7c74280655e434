"""The ``memory`` entry of ``profwin.profilers``: picks the CUDA snapshot or the CPU timeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profwin.plugin import ConfigError, Driver, PluginError, ProfileSpec, Window, checked, shown, warn
from profwin_memory.cpu_timeline import CpuTimelineDriver
from profwin_memory.cuda_snapshot import CudaSnapshotDriver
from profwin_memory.options import memory_options

__all__ = ["MemoryProfiler", "resolve_device"]


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise PluginError(
            f"the memory profiler needs torch, which is not importable ({exc}); install it with: "
            "pip install 'profwin-memory[engine]' (or any torch build)"
        ) from None
    return torch


@checked
def resolve_device(spec: ProfileSpec, torch: Any) -> str:
    """``cuda`` (allocator snapshot) or ``cpu`` (timeline) for this spec on this machine.

    ``activities`` unset means CUDA when ``torch.cuda.is_available()``, else CPU. The check is
    that call, never an exception: CPU builds and CUDA builds without a driver fail differently.
    """
    try:
        cuda = bool(torch.cuda.is_available())
    except AttributeError:  # not torch: a wrong argument, said as one
        raise ConfigError(f"must be the torch module (got {shown(torch)})", path="torch") from None
    if spec.activities is None:
        return "cuda" if cuda else "cpu"
    kept = []
    for activity in spec.activities:
        if activity in ("npu", "xpu"):
            raise ConfigError(
                f"the memory profiler records CUDA allocator snapshots or a CPU timeline, not {activity!r} "
                "(NPU memory is recorded by the 'npu' profiler of profwin-npu)",
                path="activities",
            )
        if activity == "cuda" and not cuda:
            why = f"torch {torch.__version__} reports torch.cuda.is_available() == False on this machine"
            if spec.on_unavailable == "error":
                raise ConfigError(
                    f"'cuda' memory cannot be recorded: {why}; ask for ['cpu'] or set on_unavailable: drop",
                    path="activities",
                )
            warn(f"profwin: dropping activity 'cuda': {why}")
            continue
        kept.append(activity)
    if not kept:
        raise ConfigError(f"none of {list(spec.activities)} can be recorded on this machine", path="activities")
    if len(kept) > 1:
        raise ConfigError(
            f"the memory profiler records one device per session (got {kept}): ['cuda'] for the CUDA allocator "
            "snapshot, ['cpu'] for the CPU memory timeline",
            path="activities",
        )
    return str(kept[0])


class MemoryProfiler:
    """Windowed memory recording: a CUDA allocator snapshot, or a CPU memory timeline.

    The driver opens one step before the window (``lead_steps = 1``): on CPU that step prepares
    torch.profiler, as the ``torch`` profiler does; on CUDA it does nothing. Recording starts when
    step ``window.start`` begins and ends when step ``window.end`` would begin, or when the
    session closes early (the part of the window that ran is written).
    """

    name = "memory"
    lead_steps = 1

    def validate_options(self, options: Mapping[str, Any]) -> None:
        """Check ``options.memory`` without torch (``profwin validate`` calls this)."""
        memory_options(options)

    def check(self, spec: ProfileSpec) -> ProfileSpec:
        memory_options(spec)
        return spec.replace(activities=(resolve_device(spec, _import_torch()),))

    def open(self, spec: ProfileSpec, *, window: Window, first_step: int, rank: int) -> Driver:
        torch = _import_torch()
        options = memory_options(spec)
        assert spec.activities is not None, "MemoryProfiler.check resolves the device"
        driver = CudaSnapshotDriver if spec.activities == ("cuda",) else CpuTimelineDriver
        return driver(torch, spec, options, window=window, first_step=first_step, rank=rank)
