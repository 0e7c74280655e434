"""One streaming pass over a trace that keeps what summarize and trim need, compactly.

While the reader decodes events, a scan (:func:`profwin_traces.indexing.scan`, which picks
this module's standard path or :mod:`profwin_traces.columnar`'s numpy one) keeps:

* the top-level keys, process and thread names, and the step markers (few);
* for every event, in file order, ``(offset, length, ts, end)``: where its text is and when it
  happens. Trim copies events by offset on a second, parse-free read; summarize counts bytes per
  step from it;
* for every complete event (``ph: X``), once its children are known, ``(ts, self, name)``: the
  self time (duration minus the durations of directly nested events on the same thread), found
  with a per-thread stack as events arrive in time order, which is how torch writes them
  (runtime calls, written by Kineto after all operators, get a stack of their own, so an
  operator's self time includes the kernel launches it makes);
* for device lanes (kernels, memcpy, memset): ``(ts, end, correlation, kind)``, and for kernel
  launches on the host (``cudaLaunchKernel``…) ``(correlation, ts, end)``, which summarize joins
  by correlation id for launch delays.

The tables are typed arrays spilled to a temporary file every :data:`SPILL_ROWS` rows, so memory
stays bounded whatever the trace size. The few unbounded things a hostile trace could grow are
capped: distinct threads (:data:`MAX_THREADS`), step markers (:data:`MAX_MARKERS`), distinct
operator names (:data:`MAX_NAMES`, then one bucket), the length of a name or label kept.
"""

from __future__ import annotations

import math
import re
import tempfile
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from attrs import define, field

from profwin.plugin import StepMarker, shown
from profwin_traces.reader import Record, TraceError
from profwin_traces.steps import Marker, MarkerMatcher
from profwin_traces.tokens import TOKENS_MARKER, Span

__all__ = [
    "DEVICE_CATEGORIES",
    "KERNEL_KINDS",
    "MAX_LABEL_CHARS",
    "MAX_MARKERS",
    "MAX_NAMES",
    "MAX_NAME_CHARS",
    "MAX_THREADS",
    "MAX_TOKENS_CHARS",
    "OTHER_NAMES",
    "SPILL_ROWS",
    "Columns",
    "TraceIndex",
    "check_new_thread",
    "kernel_kind",
]

SPILL_ROWS = 1 << 17
"""Rows kept in memory per table before they go to the temporary file."""

MAX_THREADS = 1 << 16
"""Distinct ``(pid, tid)`` pairs a trace may hold; more is refused (real traces have hundreds)."""
MAX_NAMES = 1 << 16
"""Distinct operator and kernel names kept apart; the rest are totalled under :data:`OTHER_NAMES`."""
MAX_MARKERS = 1 << 18
"""Step markers a trace may hold (a 10 GB trace of 200 KB steps has 50,000); more is refused."""
MAX_LABEL_CHARS = 200
"""Step markers' names (the step's label) are cut to this many characters."""
MAX_NAME_CHARS = 1024
"""Names are cut to this many characters (with ``…``) before they are kept."""
MAX_TOKENS_CHARS = 320
"""The longest ``profwin.tokens`` annotation kept: longer than any that follows the form (every
key with 18 digits is 288 characters), so a longer one is counted as refused and never held: a
trace's annotations cost at most :data:`MAX_MARKERS` times this, whatever their names' length."""
MAX_ID_CHARS = 256
"""A ``pid`` or ``tid`` written as a string longer than this is refused."""
OTHER_NAMES = "(other names past the limit)"

DEVICE_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
"""Categories counted as kernels (device work) rather than host operators."""

KERNEL_KINDS = ("compute", "communication", "memory", "other")
"""Kinds of device work, classified by name as HTA does (``kernel_kind``)."""

# Spans that are not operators: the profiler's own span, GPU copies of annotations, flows.
_NOT_OPS = frozenset({"Trace", "gpu_user_annotation"})
_RUNTIME_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver", "runtime", "xpu_runtime", "privateuse1_runtime"})
# Host calls that start device work (HTA 0.5 counts these, memory copies and sets included).
_LAUNCHES = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync", "cudaMemsetAsync",
    "hipLaunchKernel", "hipExtLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
})  # fmt: skip
_NAMED = {"process_name": "processes", "thread_name": "threads"}
_MAX_CATEGORIES = 4096  # categories remembered; real traces have a dozen
# traceinsight 0.6.1's kernel types (hta/common/types.py: CommunicateKernelGroupingPattern,
# MemoryKernelGroupingPattern, ComputeKernelGroupingPattern), matched at the start of the name.
# HTA 0.5 had communication = nccl…Kernel only and fewer names outside compute.
_COMMUNICATION = re.compile(r"nccl|hip|hccl|.*ncclKernel")
_MEMORY = re.compile(r"(?:hip)?(?:Memcpy|Memset)|dma")
_NOT_COMPUTE = re.compile(
    r"nccl|.*Memcpy|.*Memset|.*dma|.*Sync|Stream Wait Event|cuda.*LaunchKernel|runFunction|hip|job_exe|packet"
    r"|pe_exe|cpum_exe_subgraph|hccl|collective_subgraph_execution"
)


def kernel_kind(name: str) -> int:
    """Index into :data:`KERNEL_KINDS` for a device event's name (traceinsight 0.6.1's rules:
    ``get_kernel_type``)."""
    if _COMMUNICATION.match(name):
        return 1
    if _MEMORY.match(name):
        return 2
    return 3 if _NOT_COMPUTE.match(name) else 0


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
        if len(self.columns[0]) >= self._spill_rows:
            self._spill()

    def extend(self, *columns: Any) -> None:
        """Append rows given a column at a time (numpy arrays of the table's types). Once the
        table spills, they go to the file as they are: copying them into the typed arrays first
        cost 0.04 CPU s per 256 MiB trace."""
        n = len(columns[0])
        if self._file is None and len(self.columns[0]) + n < self._spill_rows:
            for column, new in zip(self.columns, columns, strict=True):
                column.frombytes(memoryview(new).cast("B"))
            return
        self._spill()  # the rows in memory come first
        assert self._file is not None
        for new in columns:
            self._file.write(memoryview(new).cast("B"))
        self._chunks.append(n)
        self.rows += n

    def _spill(self) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="profwin-trace-")  # noqa: SIM115 (closed by close())
        n = len(self.columns[0])
        if not n:
            return
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
    markers: dict[StepMarker, list[Marker]] = field(factory=dict)
    """Host-side step markers per producer."""
    device_markers: dict[StepMarker, list[Marker]] = field(factory=dict)
    """GPU-side copies of step annotations: where each step's device work ends."""
    tokens: list[Span] = field(factory=list)
    """Host-side ``profwin.tokens`` spans: what each step held (:mod:`profwin_traces.tokens`)."""
    tokens_too_long: int = 0
    """``profwin.tokens`` spans whose name is longer than :data:`MAX_TOKENS_CHARS`: refused, not kept."""
    tokens_too_long_first: str = ""
    """The first of them, cut for a message (:func:`profwin.errors.shown`)."""
    names: list[tuple[str, bool]] = field(factory=list)
    """``(name, is_kernel)`` for each name id in :attr:`timed`."""
    placed: Columns = field(factory=lambda: Columns("qidd"))
    """File order: offset, length, ts, end (untimed events: -inf, +inf)."""
    timed: Columns = field(factory=lambda: Columns("ddid"))
    """Complete events once closed: ts, self time, name id (-1: not an operator)."""
    device: Columns = field(factory=lambda: Columns("dddb"))
    """Device work: ts, end, correlation id (nan: none), kind (index into KERNEL_KINDS)."""
    launches: Columns = field(factory=lambda: Columns("ddd"))
    """Kernel launches on the host: correlation id, ts, end."""
    unordered: int = 0
    """Complete events that arrived earlier than the one before them on their thread."""
    bad_times: int = 0
    """Events whose ``ts`` or ``dur`` is not a finite number, or whose ``dur`` is negative."""
    searched: tuple[StepMarker, ...] = ()
    """The step markers looked for."""
    names_capped: int = 0
    """The cap on distinct names when the trace went past it (0: it did not)."""
    parts: tuple[Path, ...] = ()
    """The part traces of one window indexed as one, in order (empty: one file, :attr:`path`)."""

    def close(self) -> None:
        for table in (self.placed, self.timed, self.device, self.launches):
            table.close()


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _thread_id(value: object, what: str, index: TraceIndex) -> Any:
    if value is None or type(value) is int:
        return value
    if isinstance(value, str) and len(value) <= MAX_ID_CHARS:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value
    shown = repr(value)
    raise TraceError(
        index.path,
        f"event {index.events}: {what} must be an int or a string of at most {MAX_ID_CHARS} characters "
        f"(got {type(value).__name__} {shown[:60]}{'…' if len(shown) > 60 else ''})",
    )


def check_new_thread(pid: Any, tid: Any, known: int, index: TraceIndex) -> None:
    """A ``(pid, tid)`` not seen before, with ``known`` threads seen so far: its ids of a type
    the tools take, and room for it (:data:`MAX_THREADS`); refused at the event ``index`` is on."""
    _thread_id(pid, "pid", index)
    _thread_id(tid, "tid", index)
    if known >= MAX_THREADS:
        raise TraceError(index.path, f"more than {MAX_THREADS:,} distinct (pid, tid) threads; a real trace has a few hundred")


class _Filler:
    """The per-event work of :func:`scan`, with its per-thread stacks."""

    def __init__(self, index: TraceIndex, markers: Sequence[StepMarker] | None) -> None:
        self.index = index
        self.matcher = MarkerMatcher(markers)
        index.searched = self.matcher.markers
        self.plain_names = self.matcher.plain
        self.t_starts, self.t_selfs, self.t_names, self.t_totals = index.timed.columns
        self.add_timed = (self.t_starts.append, self.t_selfs.append, self.t_names.append, self.t_totals.append)
        self.name_ids: tuple[dict[str, int], dict[str, int]] = ({}, {})  # operators, kernels
        self.kinds: dict[str, int] = {}
        self.categories: dict[str, tuple[bool, bool, bool]] = {}
        # Per thread: [events, pid, lane, lane]; a lane is [the last ts, a stack of open events
        # [end, ts, dur, children_dur, name_id]], one for operators and one for runtime calls.
        self.threads: dict[tuple[Any, Any], list[Any]] = {}

    def fill(self, batches: Iterator[tuple[list[Record], list[int], list[int]]]) -> None:
        index = self.index
        offsets, lengths, starts, ends = index.placed.columns
        # Bound methods in locals: the inner loop runs once per event.
        add_start, add_end = starts.append, ends.append
        threads = self.threads
        thread: list[Any] = []
        last_pid = last_tid = object()  # equal to no pid
        inf = math.inf
        count = chars = 0
        for records, batch_offsets, batch_lengths in batches:
            offsets.extend(batch_offsets)
            lengths.extend(batch_lengths)
            count += len(records)
            chars += sum(batch_lengths)
            for ph, cat, name, pid, tid, raw_ts, raw_dur, correlation, arg_name in records:
                ts = raw_ts if type(raw_ts) is float else _number(raw_ts)
                if ts is not None and not -inf < ts < inf:
                    index.bad_times += 1
                    ts = None
                if ph == "M" or ts is None:
                    add_start(-inf)
                    add_end(inf)
                    if ph == "M":
                        self.metadata(name, pid, tid, arg_name)
                    continue
                if pid != last_pid or tid != last_tid:  # consecutive events mostly share a thread
                    try:
                        known = threads.get((pid, tid))
                    except TypeError:  # a list or dict: new_thread says what is wrong
                        known = None
                    thread = self.new_thread(pid, tid) if known is None else known
                    last_pid, last_tid = pid, tid
                thread[0] += 1
                if ph != "X":
                    add_start(ts)
                    add_end(ts)
                    continue
                dur = raw_dur if type(raw_dur) is float else (_number(raw_dur) if raw_dur is not None else 0.0)
                if dur is None or not 0.0 <= dur < inf:
                    index.bad_times += 1
                    dur = 0.0
                add_start(ts)
                add_end(ts + dur)
                self.complete(
                    thread, ts, dur, name if type(name) is str else str(name), cat if type(cat) is str else "", correlation
                )
            if len(offsets) >= SPILL_ROWS:
                index.placed.maybe_spill()
        for thread in threads.values():
            for lane in thread[2:]:
                while lane is not None and lane[1]:
                    self.close_entry(lane[1].pop())
        index.thread_events.update({key: thread[0] for key, thread in threads.items()})
        index.events = count
        index.event_chars = chars

    def new_thread(self, pid: Any, tid: Any) -> list[Any]:
        """The state of a thread not seen before: [events, pid, operators' lane, runtime calls' lane]."""
        check_new_thread(pid, tid, len(self.threads), self.index)
        thread = self.threads[(pid, tid)] = [0, pid, None, None]
        return thread

    def metadata(self, name: Any, pid: Any, tid: Any, arg_name: Any) -> None:
        kind = _NAMED.get(name) if type(name) is str else None
        if kind is None or not isinstance(arg_name, str):
            return
        index = self.index
        if len(index.processes) + len(index.threads) >= MAX_THREADS:
            raise TraceError(index.path, f"more than {MAX_THREADS:,} process and thread names")
        label = arg_name[:MAX_NAME_CHARS]
        if kind == "processes":
            index.processes[_thread_id(pid, "pid", index)] = label
        else:
            index.threads[(_thread_id(pid, "pid", index), _thread_id(tid, "tid", index))] = label

    def close_entry(self, entry: list[Any]) -> None:
        if entry[4] >= 0:
            self.t_starts.append(entry[1])
            self.t_selfs.append(max(entry[2] - entry[3], 0.0))
            self.t_names.append(entry[4])
            self.t_totals.append(entry[2])
        if len(self.t_starts) >= SPILL_ROWS:
            self.index.timed.maybe_spill()

    def complete(self, thread: list[Any], ts: float, dur: float, name: str, cat: str, correlation: Any) -> None:
        end = ts + dur
        kind = self.categories.get(cat)
        if kind is None:
            kind = self.category(cat)
        not_op, is_kernel, is_runtime = kind
        # The hot path: most events are operators whose name was seen before.
        marker = None if name in self.plain_names else self.matcher.match(name, cat)
        if marker is not None or not_op:
            name_id = self.special(thread[1], ts, end, name, cat, marker)
        else:
            name_id = self.name_ids[is_kernel].get(name, -1)
            if name_id < 0:
                name_id = self.name_id(name, is_kernel)
            if is_kernel:
                self.device_work(ts, end, name, correlation)
            elif is_runtime and correlation is not None and name in _LAUNCHES:
                self.launch(ts, end, correlation)
        # Runtime calls (cudaLaunchKernel, ...) come from CUPTI and are written after all
        # operators, on the operators' thread: they get their own stack on that thread.
        lane = thread[3 if is_runtime else 2]
        if lane is None:
            lane = thread[3 if is_runtime else 2] = [-math.inf, []]
        stack: list[list[Any]] = lane[1]
        if ts < lane[0]:
            # Out of time order: the stack cannot place it; close what is open and restart.
            self.index.unordered += 1
            while stack:
                self.close_entry(stack.pop())
        lane[0] = ts
        if stack and stack[-1][0] <= ts:
            # close_entry, inlined: this is once per event.
            add_start, add_self, add_name, add_total = self.add_timed
            while stack and stack[-1][0] <= ts:
                done = stack.pop()
                if done[4] >= 0:
                    add_start(done[1])
                    own = done[2] - done[3]
                    add_self(own if own > 0.0 else 0.0)
                    add_name(done[4])
                    add_total(done[2])
            if len(self.t_starts) >= SPILL_ROWS:
                self.index.timed.maybe_spill()
        entry = [end, ts, dur, 0.0, name_id]
        if stack and stack[-1][1] == ts and stack[-1][0] <= end and stack[-1][2] < dur:
            # Open events with the same start that fit inside this one are nested in it (the
            # parent was written after them): slide it under them, the outermost becoming its
            # direct child instead of the enclosing event's.
            moved = []
            while stack and stack[-1][1] == ts and stack[-1][0] <= end and stack[-1][2] < dur:
                moved.append(stack.pop())
            direct = moved[-1]
            entry[3] += direct[2]
            if stack and stack[-1][0] >= direct[0]:
                stack[-1][3] -= direct[2]
            if stack and stack[-1][0] >= end:
                stack[-1][3] += dur
            stack.append(entry)
            stack.extend(reversed(moved))
            return
        if stack and stack[-1][0] >= end:
            stack[-1][3] += dur
        stack.append(entry)

    def category(self, cat: str) -> tuple[bool, bool, bool]:
        """``(not an operator, device work, runtime call)`` for a category, remembered."""
        kind = (cat in _NOT_OPS, cat in DEVICE_CATEGORIES, cat in _RUNTIME_CATEGORIES)
        if len(self.categories) < _MAX_CATEGORIES:
            self.categories[cat] = kind
        return kind

    def special(self, pid: Any, ts: float, end: float, name: str, cat: str, marker: StepMarker | None) -> int:
        """Record a step marker, a GPU copy of one or a step's ``profwin.tokens`` annotation; none
        is an operator (name id -1)."""
        index = self.index
        if marker is TOKENS_MARKER:
            if len(index.tokens) + index.tokens_too_long >= MAX_MARKERS:
                raise TraceError(index.path, f"more than {MAX_MARKERS:,} profwin.tokens annotations")
            if len(name) > MAX_TOKENS_CHARS:  # follows no form: counted, never held
                index.tokens_too_long += 1
                index.tokens_too_long_first = index.tokens_too_long_first or shown(name)
                return -1
            index.tokens.append((pid, ts, end, name))
            return -1
        if marker is None:
            marker = self.matcher.match(name, None) if cat == "gpu_user_annotation" else None
            if marker is TOKENS_MARKER:  # its GPU copy marks no step
                marker = None
            table = index.device_markers
        else:
            table = index.markers
        if marker is not None:
            number = -1 if marker.numbering == "order" else self.number(marker, name)
            label = name if len(name) <= MAX_LABEL_CHARS else name[: MAX_LABEL_CHARS - 1] + "…"
            found = table.setdefault(marker, [])
            if len(found) >= MAX_MARKERS:
                raise TraceError(index.path, f"more than {MAX_MARKERS:,} {marker.producer} step markers")
            found.append((pid, label, ts, end, number))
        return -1

    def device_work(self, ts: float, end: float, name: str, correlation: Any) -> None:
        kind = self.kinds.get(name)
        if kind is None:
            kind = kernel_kind(name)
            if len(self.kinds) < MAX_NAMES:
                self.kinds[name] = kind
        corr = _number(correlation) if correlation is not None else None
        columns = self.index.device.columns
        columns[0].append(ts)
        columns[1].append(end)
        columns[2].append(math.nan if corr is None else corr)
        columns[3].append(kind)
        if len(columns[0]) >= SPILL_ROWS:
            self.index.device.maybe_spill()

    def launch(self, ts: float, end: float, correlation: Any) -> None:
        corr = _number(correlation)
        if corr is None:
            return
        columns = self.index.launches.columns
        columns[0].append(corr)
        columns[1].append(ts)
        columns[2].append(end)
        if len(columns[0]) >= SPILL_ROWS:
            self.index.launches.maybe_spill()

    def number(self, marker: StepMarker, name: str) -> int:
        try:
            return marker.step_number(name)
        except ValueError as exc:
            raise TraceError(self.index.path, f"event {self.index.events}: {exc}") from None

    def name_id(self, name: str, is_kernel: bool) -> int:
        """The id of a name not seen before (cut to MAX_NAME_CHARS; past MAX_NAMES, the bucket's)."""
        ids = self.name_ids[is_kernel]
        if len(name) > MAX_NAME_CHARS:
            name = name[: MAX_NAME_CHARS - 1] + "…"
        name_id = ids.get(name)
        if name_id is not None:
            return name_id
        if len(self.index.names) >= MAX_NAMES:
            self.index.names_capped = MAX_NAMES
            name = OTHER_NAMES
            name_id = ids.get(name)
            if name_id is not None:
                return name_id
        name_id = ids[name] = len(self.index.names)
        self.index.names.append((name, is_kernel))
        return name_id


def require_events(index: TraceIndex) -> None:
    """A trace without events is not worth summarizing; say so with the file's name."""
    if index.events == 0:
        raise TraceError(index.path, "the trace has no events ('traceEvents' is empty)")
