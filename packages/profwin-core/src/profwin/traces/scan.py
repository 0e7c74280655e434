"""One streaming pass over a trace that keeps what summarize and trim need, compactly.

While the reader decodes events, :func:`scan` keeps:

* the top-level keys, process and thread names, and the step markers (few);
* for every event, in file order, ``(offset, length, ts, end)``: where its text is and when it
  happens. Trim copies events by offset on a second, parse-free read; summarize counts bytes per
  step from it;
* for every complete event (``ph: X``), once its children are known, ``(ts, self, name)``: the
  self time (duration minus the durations of directly nested events on the same thread), found
  with a per-thread stack as events arrive in time order, which is how torch writes them
  (runtime calls, written by Kineto after all operators, get a stack of their own, so an
  operator's self time includes the kernel launches it makes).

Both tables are typed arrays (48 bytes per event in all) spilled to a temporary file every
:data:`SPILL_ROWS` rows, so memory stays bounded whatever the trace size.
"""

from __future__ import annotations

import math
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from attrs import define, field

from profwin.traces.reader import Progress, TraceError, read_trace
from profwin.traces.steps import PRODUCERS, Marker, marker_kind

__all__ = ["DEVICE_CATEGORIES", "SPILL_ROWS", "Columns", "TraceIndex", "scan"]

SPILL_ROWS = 1 << 20
"""Rows kept in memory per table before they go to the temporary file."""

DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
"""Categories counted as kernels (device work) rather than host operators."""

# Spans that are not operators: the profiler's own span, GPU copies of annotations, flows.
_NOT_OPS = frozenset({"Trace", "gpu_user_annotation"})
_RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "runtime", "xpu_runtime", "privateuse1_runtime"})
_NAMED = {"process_name": "processes", "thread_name": "threads"}


class Columns:
    """Rows of fixed-type columns, in memory up to ``spill_rows`` and in a temporary file beyond."""

    def __init__(self, typecodes: str, *, spill_rows: int = SPILL_ROWS) -> None:
        self.typecodes = typecodes
        self.columns: tuple[array[Any], ...] = tuple(array(t) for t in typecodes)
        self.rows = 0
        self._spill_rows = spill_rows
        self._file: IO[bytes] | None = None
        self._chunks: list[int] = []

    def maybe_spill(self) -> None:
        """Move the in-memory rows to the temporary file once there are ``spill_rows``."""
        n = len(self.columns[0])
        if n < self._spill_rows:
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="profwin-trace-")  # noqa: SIM115 (closed by close())
        for column in self.columns:
            column.tofile(self._file)
            del column[:]
        self._chunks.append(n)
        self.rows += n

    def chunks(self) -> Iterator[tuple[array[Any], ...]]:
        """Yield the rows in order, a chunk of columns at a time."""
        if self._file is not None:
            self._file.seek(0)
            for n in self._chunks:
                chunk: tuple[array[Any], ...] = tuple(array(t) for t in self.typecodes)
                for column in chunk:
                    column.fromfile(self._file, n)
                yield chunk
        yield self.columns

    def __len__(self) -> int:
        return self.rows + len(self.columns[0])

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@define
class TraceIndex:
    """What one pass over a trace found (see the module docstring)."""

    path: Path
    size: int
    compressed: bool
    header: dict[str, Any] = field(factory=dict)
    keys_before_events: list[str] = field(factory=list)
    events: int = 0
    event_chars: int = 0
    processes: dict[Any, str] = field(factory=dict)
    threads: dict[tuple[Any, Any], str] = field(factory=dict)
    thread_events: Counter[tuple[Any, Any]] = field(factory=Counter)
    markers: dict[str, list[Marker]] = field(factory=lambda: {p: [] for p in PRODUCERS})
    """Host-side step markers per producer."""
    device_markers: dict[str, list[Marker]] = field(factory=lambda: {p: [] for p in PRODUCERS})
    """GPU-side copies of step annotations: where each step's device work ends."""
    names: list[tuple[str, bool]] = field(factory=list)
    """``(name, is_kernel)`` for each name id in :attr:`timed`."""
    placed: Columns = field(factory=lambda: Columns("qidd"))
    """File order: offset, length, ts, end (untimed events: -inf, +inf)."""
    timed: Columns = field(factory=lambda: Columns("ddi"))
    """Complete events once closed: ts, self time, name id (-1: not an operator)."""
    unordered: int = 0
    """Complete events that arrived earlier than the one before them on their thread."""

    def close(self) -> None:
        self.placed.close()
        self.timed.close()


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def scan(path: str | Path, *, progress: Progress | None = None) -> TraceIndex:
    """Read ``path`` once and index it; the caller closes the returned index."""
    with read_trace(path, progress=progress) as reader:
        index = TraceIndex(path=reader.path, size=reader.size, compressed=reader.compressed)
        try:
            _fill(index, reader.raw_events())
        except BaseException:
            index.close()
            raise
        index.header = reader.header
        index.keys_before_events = reader.keys_before_events
    return index


def _fill(index: TraceIndex, events: Iterator[tuple[dict[str, Any], int, str]]) -> None:
    offsets, lengths, starts, ends = index.placed.columns
    t_starts, t_selfs, t_names = index.timed.columns
    name_ids: dict[tuple[str, bool], int] = {}
    names = index.names
    # Per thread: a stack of open events [end, ts, dur, children_dur, name_id] and the last ts.
    stacks: dict[tuple[tuple[Any, Any], bool], list[list[Any]]] = {}
    last_ts: dict[tuple[tuple[Any, Any], bool], float] = {}
    thread_events = index.thread_events
    inf = math.inf
    count = chars = 0

    def close_entry(entry: list[Any]) -> None:
        if entry[4] >= 0:
            t_starts.append(entry[1])
            t_selfs.append(max(entry[2] - entry[3], 0.0))
            t_names.append(entry[4])

    for event, offset, text in events:
        count += 1
        chars += len(text)
        offsets.append(offset)
        lengths.append(len(text))
        ph = event.get("ph")
        raw_ts = event.get("ts")
        ts = raw_ts if type(raw_ts) is float else _number(raw_ts)
        if ph == "M" or ts is None:
            starts.append(-inf)
            ends.append(inf)
            if ph == "M":
                kind = _NAMED.get(event.get("name"))  # type: ignore[arg-type]
                args = event.get("args")
                if kind is not None and isinstance(args, dict) and isinstance(args.get("name"), str):
                    if kind == "processes":
                        index.processes[event.get("pid")] = args["name"]
                    else:
                        index.threads[(event.get("pid"), event.get("tid"))] = args["name"]
            if len(offsets) >= SPILL_ROWS:
                index.placed.maybe_spill()
            continue
        key = (event.get("pid"), event.get("tid"))
        thread_events[key] += 1
        if ph != "X":
            starts.append(ts)
            ends.append(ts)
        else:
            raw_dur = event.get("dur", 0.0)
            dur = raw_dur if type(raw_dur) is float else (_number(raw_dur) or 0.0)
            end = ts + dur
            starts.append(ts)
            ends.append(end)
            name = event.get("name")
            if not isinstance(name, str):
                name = str(name)
            cat = event.get("cat")
            if not isinstance(cat, str):
                cat = ""
            marker = marker_kind(name, cat)
            if marker is not None:
                index.markers[marker].append((key[0], name, ts, end))
                name_id = -1
            elif cat in _NOT_OPS:
                if cat == "gpu_user_annotation":
                    device = marker_kind(name, None)
                    if device is not None:
                        index.device_markers[device].append((key[0], name, ts, end))
                name_id = -1
            else:
                name_key = (name, cat in DEVICE_CATEGORIES)
                name_id = name_ids.get(name_key, -1)
                if name_id < 0:
                    name_id = name_ids[name_key] = len(names)
                    names.append(name_key)
            # Runtime calls (cudaLaunchKernel, ...) come from CUPTI and are written after all
            # operators, on the operators' thread: they get their own stack on that thread.
            lane = (key, cat in _RUNTIME_CATEGORIES)
            stack = stacks.get(lane)
            if stack is None:
                stack = stacks[lane] = []
            if ts < last_ts.get(lane, -inf):
                # Out of time order: the stack cannot place it; close what is open and restart.
                index.unordered += 1
                while stack:
                    close_entry(stack.pop())
            last_ts[lane] = ts
            while stack and stack[-1][0] <= ts:
                close_entry(stack.pop())
            entry = [end, ts, dur, 0.0, name_id]
            # Open events with the same start that fit inside this one are nested in it (the
            # parent was written after them): slide it under them, the outermost becoming its
            # direct child instead of the enclosing event's.
            moved = []
            while stack and stack[-1][1] == ts and stack[-1][0] <= end and stack[-1][2] < dur:
                moved.append(stack.pop())
            if moved:
                direct = moved[-1]
                entry[3] += direct[2]
                if stack and stack[-1][0] >= direct[0]:
                    stack[-1][3] -= direct[2]
            if stack and stack[-1][0] >= end:
                stack[-1][3] += dur
            stack.append(entry)
            if moved:
                stack.extend(reversed(moved))
            if len(t_starts) >= SPILL_ROWS:
                index.timed.maybe_spill()
        if len(offsets) >= SPILL_ROWS:
            index.placed.maybe_spill()
    for stack in stacks.values():
        while stack:
            close_entry(stack.pop())
    index.events = count
    index.event_chars = chars


def require_events(index: TraceIndex) -> None:
    """A trace without events is not worth summarizing; say so with the file's name."""
    if index.events == 0:
        raise TraceError(index.path, "the trace has no events ('traceEvents' is empty)")
