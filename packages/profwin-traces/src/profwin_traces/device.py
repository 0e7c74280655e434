"""Device time per step: busy and idle time, time by kind of work, and kernel launch delays.

The rules are Holistic Trace Analysis' (``get_temporal_breakdown``, ``get_gpu_kernel_breakdown``,
``get_cuda_kernel_launch_stats``; traceinsight 0.6.1's kernel types), applied per step:

* device work is every event of category ``kernel``, ``gpu_memcpy`` or ``gpu_memset``; a piece of
  work belongs to the step in which its launch call (matched by correlation id) started, or,
  with no launch call in the trace, the step in which it started itself;
* **busy** is the union of the step's work intervals (overlapping streams count once), **span**
  runs from its first start to its last end, **idle** is span minus busy;
* **by kind**: the summed durations of ``compute``, ``communication`` (``nccl…``, ``hccl…``,
  ``hip…``, ``…ncclKernel…``), ``memory`` (``Memcpy…``, ``Memset…``, ``dma…``) and ``other`` work
  (:func:`~profwin_traces.scan.kernel_kind`);
* GPU-side copies of annotations (category ``gpu_user_annotation``, which Kineto adds after the
  fact) are neither device work nor host operators, nor step boundaries: HTA's main branch made
  them a category of their own (PR #343, after 0.6.1);
* **launch delay**: kernel start minus the end of its launch call (``cudaLaunchKernel``…), at
  least 0.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from attrs import frozen

from profwin.plugin import JsonForm
from profwin_traces.scan import KERNEL_KINDS, TraceIndex
from profwin_traces.steps import Step

__all__ = ["MAX_LAUNCHES", "DeviceStat", "device_stats"]

MAX_LAUNCHES = 1 << 20
"""Launch calls of the window held for matching with their kernels; beyond, delays go unmatched."""


@frozen
class DeviceStat(JsonForm):
    """Device time of one step, or of the whole window (microseconds)."""

    work: int
    """Kernels, copies and sets."""
    busy_us: float
    span_us: float
    idle_us: float
    by_kind_us: dict[str, float]
    launches: int
    """Work items matched to their launch call."""
    launch_delay_mean_us: float | None
    launch_delay_max_us: float | None


class _Acc:
    def __init__(self) -> None:
        self.intervals: list[tuple[float, float]] = []
        self.by_kind = [0.0] * len(KERNEL_KINDS)
        self.delays = 0
        self.delay_sum = 0.0
        self.delay_max = 0.0

    def stat(self) -> DeviceStat:
        busy, span = _union(self.intervals)
        return _stat(len(self.intervals), busy, span, self.by_kind, self.delays, self.delay_sum, self.delay_max)


def _stat(work: int, busy: float, span: float, by_kind: Sequence[float], launches: int, delay_sum: float,
          delay_max: float) -> DeviceStat:  # fmt: skip
    return DeviceStat(
        work=work,
        busy_us=round(busy, 3),
        span_us=round(span, 3),
        idle_us=round(span - busy, 3),
        by_kind_us={kind: round(us, 3) for kind, us in zip(KERNEL_KINDS, by_kind, strict=True)},
        launches=launches,
        launch_delay_mean_us=round(delay_sum / launches, 3) if launches else None,
        launch_delay_max_us=round(delay_max, 3) if launches else None,
    )


def _from_totals(
    index: TraceIndex, steps: Sequence[Step], selected: set[int], t0: float, t1: float
) -> tuple[dict[int, DeviceStat], DeviceStat | None]:
    """:func:`device_stats` computed by numpy (the ``fast`` extra)."""
    from profwin_traces.columnar import device_totals

    by_start = sorted((s for s in steps if s.number in selected), key=lambda s: s.start)
    found = device_totals(index, [s.start for s in by_start], [s.end for s in by_start], t0, t1, MAX_LAUNCHES)
    if found is None:
        return {}, None
    rows, total = found  # each step's values rounded already (columnar.rounded)
    stats = {
        s.number: DeviceStat(work, busy, span, idle, dict(zip(KERNEL_KINDS, kinds, strict=True)), calls, mean, most)
        for s, (work, busy, span, idle, kinds, calls, mean, most) in zip(by_start, rows, strict=True)
    }
    return stats, _stat(*total)


def _union(intervals: list[tuple[float, float]]) -> tuple[float, float]:
    """``(busy, span)`` of a list of intervals (sorted in place)."""
    if not intervals:
        return 0.0, 0.0
    intervals.sort()
    busy = 0.0
    lo, hi = intervals[0]
    last_end = hi
    for start, end in intervals[1:]:
        if start > hi:
            busy += hi - lo
            lo, hi = start, end
        elif end > hi:
            hi = end
        last_end = max(last_end, end)
    busy += hi - lo
    return busy, last_end - intervals[0][0]


def device_stats(
    index: TraceIndex, steps: Sequence[Step], selected: set[int], t0: float, t1: float
) -> tuple[dict[int, DeviceStat], DeviceStat | None]:
    """Per selected step number and for the window as a whole; empty without device lanes."""
    if not len(index.device):
        return {}, None
    from profwin_traces.columnar import numpy_or_none  # columnar imports scan

    if numpy_or_none() is not None:
        return _from_totals(index, steps, selected, t0, t1)
    launches: dict[float, tuple[float, float]] = {}
    for corrs, starts, ends in index.launches.chunks():
        for corr, start, end in zip(corrs, starts, ends, strict=True):
            if t0 <= start < t1 and len(launches) < MAX_LAUNCHES:
                launches[corr] = (start, end)
    by_start = sorted((s for s in steps if s.number in selected), key=lambda s: s.start)
    step_starts = [s.start for s in by_start]
    accs = [_Acc() for _ in by_start]
    total = _Acc()
    right = bisect.bisect_right
    for starts, ends, corrs, kinds in index.device.chunks():
        for start, end, corr, kind in zip(starts, ends, corrs, kinds, strict=True):
            launch = None if math.isnan(corr) else launches.get(corr)
            anchor = start if launch is None else launch[0]
            i = right(step_starts, anchor) - 1
            if i < 0 or anchor >= by_start[i].end:
                continue
            for acc in (accs[i], total):
                acc.intervals.append((start, end))
                acc.by_kind[kind] += end - start
                if launch is not None:
                    delay = max(start - launch[1], 0.0)
                    acc.delays += 1
                    acc.delay_sum += delay
                    acc.delay_max = max(acc.delay_max, delay)
    if not total.intervals:
        return {}, None
    return {s.number: acc.stat() for s, acc in zip(by_start, accs, strict=True)}, total.stat()
