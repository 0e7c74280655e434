"""The CPU driver: a compact memory timeline of the window, from torch.profiler's allocator events.

torch.profiler with ``profile_memory=True`` records every CPU allocation and free as an
``Allocation`` event in its event tree, nested under the op that made it. The driver records
exactly the window's steps (warm-up in the step before, as the ``torch`` profiler does), wraps
each step in ``ProfilerStep#k``, and at the end turns the events into one small JSON file:
per-step totals, the ops that allocated most, and (``timeline: events``) every event with the
live total after it. This skips the Chrome trace and the deprecated ``export_memory_timeline``
(which needs shapes and stacks, and categorises every tensor: ~100x slower here; see
``docs/backends/memory.md``).

What the numbers mean: "live bytes" start at 0 at the window's start and are the bytes
allocated in the window and not yet freed — the window's own memory growth, not the process's
footprint. A free counts only when the window allocated that address: the CPU allocator reports
the free of an older block with whatever size its table last held for the address, which is 0 or,
when an earlier profiled block lived there, that block's stale size. Such frees are counted in
``totals.frees_of_older_blocks``, never in the window's bytes.
"""

from __future__ import annotations

import bisect
import gzip
import json
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from profwin.plugin import Artifact, ProfileSpec, Window, checked
from profwin.plugin.files import STEP_MARKER, WindowedProfile, write_atomic
from profwin_memory.naming import artifact_path
from profwin_memory.options import MemoryOptions

__all__ = ["TIMELINE_FORMAT", "TIMELINE_VERSION", "CpuTimelineDriver", "build_timeline"]

TIMELINE_FORMAT = "profwin.memory-timeline"
TIMELINE_VERSION = 2
"""The version written: 2 has every total and column (1: written before the shape grew a version;
the reader takes both, :data:`profwin_memory.timeline.VERSION`)."""
_NO_OP = "(outside any op)"
_SUFFIXES = {"json": ".memory_timeline.json", "json.gz": ".memory_timeline.json.gz"}


class CpuTimelineDriver:
    """One window of CPU allocator events (see the module docstring)."""

    def __init__(
        self, torch: Any, spec: ProfileSpec, options: MemoryOptions, *, window: Window, first_step: int, rank: int
    ) -> None:
        from torch.profiler import ProfilerActivity

        self._torch = torch
        self._spec = spec
        self._options = options
        self._window = window
        self._rank = rank
        self._profile = WindowedProfile(
            torch, window=window, first_step=first_step, activities=[ProfilerActivity.CPU], profile_memory=True
        )

    def advance(self, step: int) -> None:
        self._profile.advance(step)

    def close(self, steps: Window | None, *, failed: bool) -> list[Artifact]:
        if not self._profile.stop(steps):
            return []
        assert steps is not None
        timeline = build_timeline(
            self._profile.prof.profiler.kineto_results.experimental_event_tree(), steps=steps, options=self._options
        )
        timeline.update(window=str(self._window), rank=self._rank, pid=os.getpid(), torch=str(self._torch.__version__))
        final = artifact_path(self._spec, rank=self._rank, steps=steps, suffix=_SUFFIXES[self._options.format])
        size = _write_json(final, timeline, gz=self._options.format == "json.gz")
        return [Artifact(path=final, steps=steps, bytes=size, rank=self._rank, kind="memory-timeline", producer="memory")]


def _write_json(final: Path, data: dict[str, Any], *, gz: bool) -> int:
    text = json.dumps(data, separators=(",", ":")).encode()
    return write_atomic(final, gzip.compress(text) if gz else text).stat().st_size


def _step_number(name: str) -> int | None:
    number = name[len(STEP_MARKER) :] if name.startswith(STEP_MARKER) else ""
    return int(number) if number.isdigit() else None


def _walk(roots: Iterable[Any]) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, str, int]]]:
    """One pass over the event tree (attribute access on its nodes is the expensive part).

    Returns the ``(start_ns, end_ns, step)`` of every ``ProfilerStep#k`` range, by start time,
    and ``(time_ns, bytes, op, address)`` for each CPU allocation (bytes > 0) or free (< 0). ``op`` is the
    outermost op (or ``record_function`` range) enclosing the event below the step marker: the
    call the user's code made, e.g. ``aten::linear`` rather than the ``aten::empty`` inside it.
    """
    markers: list[tuple[int, int, int]] = []
    allocations: list[tuple[int, int, str, int]] = []
    stack: list[tuple[Any, str | None]] = [(root, None) for root in roots]
    while stack:
        event, op = stack.pop()
        fields = event.extra_fields
        if type(fields).__name__ == "_ExtraFields_Allocation":
            if fields.alloc_size and fields.device.type == "cpu":
                allocations.append((event.start_time_ns, int(fields.alloc_size), op or _NO_OP, int(fields.ptr)))
            continue
        name = event.name
        step = _step_number(name)
        if step is not None:
            markers.append((event.start_time_ns, event.end_time_ns, step))
        elif op is None:
            op = name
        stack.extend((child, op) for child in event.children)
    markers.sort()
    allocations.sort()
    return markers, allocations


@checked
def build_timeline(roots: Iterable[Any], *, steps: Window, options: MemoryOptions) -> dict[str, Any]:
    """The timeline JSON (without run metadata) for the allocator events of ``steps``.

    Events are placed in a step by time, so allocations on other threads count too; events
    outside every recorded step, or in a step after ``steps`` (the marker opened just before an
    early close), are left out and counted in ``totals.outside_steps``.
    """
    markers, allocations = _walk(roots)
    starts = [m[0] for m in markers]
    assert steps.end is not None
    numbers = list(range(steps.start, steps.end))
    index = {step: i for i, step in enumerate(numbers)}
    per_step: dict[str, list[int]] = {
        key: [0] * len(numbers)
        for key in ("alloc_bytes", "alloc_count", "free_bytes", "free_count", "peak_live_bytes", "end_live_bytes")
    }
    events: dict[str, list[Any]] = {"t_us": [], "step": [], "bytes": [], "live_bytes": [], "op": []}
    op_ids: dict[str, int] = {}
    op_bytes: Counter[str] = Counter()
    op_count: Counter[str] = Counter()
    origin = starts[0] if starts else 0
    live = peak = outside = 0
    peak_step = None
    filled = 0  # steps [0, filled) of `numbers` have their start value set
    allocated_here: dict[int, int] = {}  # address -> size of each block the window allocated and still holds
    older_frees = 0
    for t, nbytes, op, address in allocations:
        at = bisect.bisect_right(starts, t) - 1
        if at < 0 or t > markers[at][1] or markers[at][2] not in index:
            outside += 1
            continue
        if nbytes > 0:
            allocated_here[address] = nbytes
        else:
            held = allocated_here.pop(address, None)
            if held is None:
                older_frees += 1
                continue
            nbytes = -held
        step = markers[at][2]
        i = index[step]
        while filled <= i:  # steps entered since the last event start at the current live total
            per_step["peak_live_bytes"][filled] = per_step["end_live_bytes"][filled] = live
            filled += 1
        live += nbytes
        if nbytes > 0:
            per_step["alloc_bytes"][i] += nbytes
            per_step["alloc_count"][i] += 1
            op_bytes[op] += nbytes
            op_count[op] += 1
        else:
            per_step["free_bytes"][i] -= nbytes
            per_step["free_count"][i] += 1
        per_step["peak_live_bytes"][i] = max(per_step["peak_live_bytes"][i], live)
        per_step["end_live_bytes"][i] = live
        if live > peak:
            peak, peak_step = live, step
        if options.timeline == "events":
            events["t_us"].append(round((t - origin) / 1000, 1))
            events["step"].append(step)
            events["bytes"].append(nbytes)
            events["live_bytes"].append(live)
            events["op"].append(op_ids.setdefault(op, len(op_ids)))
    for i in range(filled, len(numbers)):
        per_step["peak_live_bytes"][i] = per_step["end_live_bytes"][i] = live
    timeline: dict[str, Any] = {
        "format": TIMELINE_FORMAT,
        "version": TIMELINE_VERSION,
        "device": "cpu",
        "steps": str(steps),
        "units": {"bytes": "bytes", "t_us": "microseconds from the start of the first step"},
        "totals": {
            "alloc_bytes": sum(per_step["alloc_bytes"]),
            "alloc_count": sum(per_step["alloc_count"]),
            "free_bytes": sum(per_step["free_bytes"]),
            "free_count": sum(per_step["free_count"]),
            "peak_live_bytes": peak,
            "peak_step": peak_step,
            "end_live_bytes": live,
            "outside_steps": outside,
            "frees_of_older_blocks": older_frees,
        },
        "per_step": {"step": numbers, **per_step},
        "top_ops": [
            {"op": op, "alloc_bytes": nbytes, "alloc_count": op_count[op]} for op, nbytes in op_bytes.most_common(options.top_ops)
        ],
    }
    if options.timeline == "events":
        timeline["ops"] = list(op_ids)
        timeline["events"] = events
    return timeline
