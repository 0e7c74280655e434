"""``summarize``: the steps of a trace, their wall times and bytes, and what ran inside a window."""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from profwin.plugin import ConfigError, JsonForm, StepMarker, Window, checked, shown
from profwin.plugin.files import PROVENANCE_KEY
from profwin_traces.columnar import bytes_per_step, numpy_or_none, op_totals
from profwin_traces.device import DeviceStat, device_stats
from profwin_traces.indexing import scan
from profwin_traces.parts import check_steps
from profwin_traces.provenance import first_step_of, provenance, sidecar_info
from profwin_traces.reader import Progress
from profwin_traces.scan import MAX_TOKENS_CHARS, TraceIndex, require_events
from profwin_traces.steps import Step, as_window, marker_spans, number_steps, select_steps
from profwin_traces.tokens import StepTokens, parse_step_tokens, step_tokens

__all__ = [
    "OpStat",
    "StepStat",
    "Summary",
    "ThreadInfo",
    "TraceMeta",
    "count_steps",
    "render_device",
    "render_summary",
    "selection",
    "summarize",
    "token_steps",
]

TRIM_KEY = PROVENANCE_KEY
"""Top-level key of a trace profwin wrote, holding its provenance (:mod:`profwin.provenance`)."""


@frozen
class StepStat:
    """One step of the trace."""

    number: int
    label: str
    start_us: float
    """Start, in microseconds from the first step's start."""
    dur_us: float
    events: int
    """Events starting inside the step, on any thread."""
    bytes: int
    """Uncompressed JSON text of those events (characters; equal to bytes for ASCII)."""
    in_window: bool
    device: DeviceStat | None = None
    """Device time of the step (window steps of traces with device lanes only)."""
    tokens: StepTokens | None = None
    """What the step held, from its ``profwin.tokens`` annotation (``None``: not annotated)."""


@frozen
class OpStat:
    """An operator or kernel name, totalled over the window (the columns of torch's
    ``key_averages``: calls, self time, total time; the text adds self %, averages and per step)."""

    name: str
    count: int
    self_us: float
    """Time not spent in events nested inside it on the same thread."""
    total_us: float = 0.0
    """Inclusive time: the events' durations, nested events included."""


@frozen
class ThreadInfo:
    pid: Any
    tid: Any
    process: str
    thread: str
    events: int


@frozen
class TraceMeta:
    """Where the trace came from and how big it is."""

    path: str
    file_bytes: int
    compressed: bool
    events: int
    event_bytes: int
    top_level_keys: tuple[str, ...]
    rank: int | None = None
    """The rank the trace's ``distributedInfo`` names, else its provenance (``None``: neither)."""
    world_size: int | None = None
    provenance: dict[str, Any] | None = None
    """What profwin recorded with the file (:mod:`profwin.provenance`): window, steps,
    engine, version, rank, session; ``None`` for traces profwin did not write or collect."""
    parts: tuple[str, ...] = ()
    """The part traces of a long window read as this one (:attr:`path` is the first); empty
    for one file. ``file_bytes`` and ``events`` are theirs together."""


@frozen
class Summary(JsonForm):
    """What :func:`summarize` found. ``to_dict()`` is what ``profwin summarize --json`` prints."""

    trace: TraceMeta
    producer: str
    """Whose step markers numbered the steps: ``torch``, ``vllm`` or ``sglang``."""
    window: str | None
    """The window asked for (``None``: all steps)."""
    selected: str
    """The steps summarized, as a window (``"20:80"``), after clipping to the trace."""
    steps: tuple[StepStat, ...]
    """Every step in the trace; ``in_window`` marks the selected ones."""
    step_us: dict[str, float]
    """Wall time of the selected steps: count, min, median, mean, max, total (microseconds)."""
    top_ops: tuple[OpStat, ...]
    top_kernels: tuple[OpStat, ...]
    threads: tuple[ThreadInfo, ...]
    bytes_outside_steps: int
    notes: tuple[str, ...]
    device: DeviceStat | None = None
    """Device time over the window's steps (``None``: the trace has no device lanes)."""
    bad_times: int = 0
    """Events whose ``ts``/``dur`` is NaN, infinite, not a number or (``dur``) negative: counted
    as untimed (or as lasting 0), and named in :attr:`notes`."""
    ops_self_us: float = 0.0
    """Self time of all operators in the window (listed or not): what ``self %`` divides by."""
    kernels_self_us: float = 0.0
    """The same for kernels."""


def selection(
    index: TraceIndex | Sequence[TraceIndex], window: Window | None, *, first_step: int | None = None
) -> tuple[str, list[Step], list[Step], float, float, list[str]]:
    """The producer, all steps, the window's steps, and the window's time range ``[t0, t1)``
    (:func:`time_range`). ``index`` may be the indexes of one window's parts, one each, in order."""
    indexes = [index] if isinstance(index, TraceIndex) else list(index)
    producer: str | None = None
    steps: list[Step] = []
    device: list[Step] = []
    for one in indexes:
        found, its_steps, its_device = step_table(one, first_step)
        producer = producer or found
        steps += its_steps
        device += its_device
    chosen = select_steps(steps, window, path=indexes[0].path, producer=producer, searched=indexes[0].searched)
    assert producer is not None  # select_steps raises on a trace without steps
    notes = []
    if window is not None and (window.start < chosen[0].number or (window.end or 0) > chosen[-1].number + 1):
        notes.append(f"window {window} clipped to the steps in the trace: {chosen[0].number}:{chosen[-1].number + 1}")
    t0, t1 = time_range(chosen, device)
    return producer, steps, chosen, t0, t1, notes


def step_table(index: TraceIndex, first_step: int | None = None) -> tuple[str | None, list[Step], list[Step]]:
    """The producer whose markers number the steps (``None``: the trace has none), its steps,
    and the GPU-side copies of them, numbered from the trace's first step (:func:`_first_step`)."""
    first = _first_step(index, first_step)
    producer, steps = number_steps(index.markers, first_step=first)
    _, device = number_steps(index.device_markers, first_step=first)
    return producer, steps, device


def time_range(chosen: Sequence[Step], device: Sequence[Step]) -> tuple[float, float]:
    """``[t0, t1)`` of the steps ``chosen``: from the first one's start to the last end, which
    reaches the end of their GPU-side step annotations when the trace has them (``device``), so
    kernels that run after their host step are inside."""
    numbers = {s.number for s in chosen}
    t0 = min(s.start for s in chosen)
    t1 = max(s.end for s in chosen)
    device_ends = [s.end for s in device if s.number in numbers]
    return t0, max(t1, *device_ends) if device_ends else t1


def _first_step(index: TraceIndex, explicit: int | None) -> int:
    """The number of the first order-numbered step: ``explicit``, else what profwin recorded with
    the file (its provenance: a trim, a session, a collected engine trace), else 0."""
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, int) or explicit < 0:
            raise ConfigError(f"must be a non-negative int (got {shown(explicit)})", path="first_step")
        return explicit
    first = first_step_of(provenance(index.path, index.header))
    return 0 if first is None else first


@checked
def summarize(
    path: str | Path | Sequence[str | Path],
    *,
    window: Window | str | None = None,
    top: int = 20,
    first_step: int | None = None,
    progress: Progress | None = None,
    markers: Sequence[StepMarker] | None = None,
) -> Summary:
    """Summarize the trace at ``path`` (``.json`` or gzip) in one streaming pass.

    Steps come from the producer's markers (see :mod:`profwin_traces.steps`); ``window`` picks
    steps by number (``None``: all). vLLM and SGLang steps are numbered in order from
    ``first_step`` (default: 0, or the number a trim recorded), so a trace of session steps
    20..79 can be addressed by those numbers. Raises :class:`TraceError` for unreadable or
    non-trace files, traces without step markers, and windows holding none of the trace's steps.

    ``path`` may be the part traces of one long window, in order (what
    :func:`~profwin_traces.window_parts` gives): they are summarized as one trace, and must
    hold consecutive steps (:func:`~profwin_traces.parts.check_steps`).

    ``markers`` replaces the registry's step markers (:func:`~profwin_traces.step_markers`):
    a backend checking its own traces passes its marker, so it works where its plugin's entry
    point is not installed (an engine process given the source tree on ``PYTHONPATH``).
    """
    window = as_window(window)
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise ConfigError(f"must be a non-negative int (got {shown(top)})", path="top")
    index = scan(path, progress=progress, markers=markers)
    try:
        require_events(index)
        check_steps(index)
        return _summary(index, window, top, first_step)
    finally:
        index.close()


@checked
def count_steps(path: str | Path, *, markers: Sequence[StepMarker] | None = None) -> int:
    """How many steps the trace at ``path`` holds, by the registered step markers or ``markers``
    (0: none). One streaming pass in bounded memory, as :func:`summarize`: what backends call to
    check what a session recorded. A file that cannot be read as a trace is a :class:`TraceError`,
    as in :func:`summarize`, never 0: a backend keeps such a trace whole, and may drop an empty one.
    """
    index = scan(path, markers=markers)
    try:
        return len(number_steps(index.markers)[1])
    finally:
        index.close()


@checked
def token_steps(path: str | Path) -> Window | None:
    """The session steps a token window's trace holds, read from the ``session_step`` of its
    ``profwin.tokens`` annotations (:class:`profwin.runtime.tokens.StepTokens`): from the first to the
    last, or ``None`` when it holds none (a file that cannot be read as a trace is a
    :class:`TraceError`, as in :func:`count_steps`). Backends report this, not what they asked the
    engine for."""
    index = scan(path)
    try:
        numbers = []
        for _, _, _, name in index.tokens:
            try:
                held = parse_step_tokens(name)
            except ConfigError:
                continue
            if held is not None and held.session_step is not None:
                numbers.append(held.session_step)
    finally:
        index.close()
    return Window(min(numbers), max(numbers) + 1) if numbers else None


def _summary(index: TraceIndex, window: Window | None, top: int, first_step: int | None) -> Summary:
    producer, steps, chosen, t0, t1, notes = selection(index, window, first_step=first_step)
    known = provenance(index.path, index.header)
    by_start = sorted(steps, key=lambda s: s.start)
    step_bytes, step_events, outside = _bytes_per_step(index, by_start)
    ops, kernels = _op_totals(index, t0, t1)

    origin = by_start[0].start
    selected = {s.number for s in chosen}
    per_step_device, device = device_stats(index, steps, selected, t0, t1)
    tokens: dict[int, StepTokens] = {}
    if index.tokens:  # only annotated traces pay for it
        spans = marker_spans(index.markers, producer, first_step=_first_step(index, first_step))
        tokens, token_notes = step_tokens(index.tokens, spans)
        notes += token_notes
    if index.tokens_too_long:
        notes.append(
            f"{index.tokens_too_long:,} profwin.tokens spans are longer than any annotation that follows the form "
            f"({MAX_TOKENS_CHARS} characters) and are left out; the first: {index.tokens_too_long_first}"
        )
    stats = tuple(
        StepStat(
            number=s.number,
            label=s.label,
            start_us=round(s.start - origin, 3),
            dur_us=round(s.dur, 3),
            events=step_events[i],
            bytes=step_bytes[i],
            in_window=s.number in selected,
            device=per_step_device.get(s.number),
            tokens=tokens.get(s.number),
        )
        for i, s in sorted(enumerate(by_start), key=lambda pair: pair[1].number)
    )
    damaged = sidecar_info(index.path)[1]
    if damaged:
        notes.append(f"{Path(index.path).name}: {damaged}; summarized without it")
    if not index.parts and type(known.get("part")) is int:
        notes.append(
            f"this is part {known['part']} of window {known.get('window')}; give all its parts (or their folder) "
            "to read the window as one"
        )
    merged = known.get("merged")
    if isinstance(merged, list) and len(merged) > 1:
        notes.append(
            f"this trace merges {len(merged)} traces (profwin merge), one process each: a step spans all of them, so its "
            "time runs from the earliest process's start to the latest one's end, clock offsets and the ranks' drift "
            "included; for each rank's own step times, summarize the inputs (profwin summarize FOLDER)"
        )
    if index.unordered:
        notes.append(
            f"{index.unordered} complete events were out of time order on their thread; self times near them are approximate"
        )
    if index.bad_times:
        notes.append(
            f"{index.bad_times} events have a ts or dur that is NaN, infinite, not a number or negative; "
            "they count as untimed (bad ts) or as lasting 0 (bad dur)"
        )
    if index.names_capped:
        notes.append(f"over {index.names_capped:,} distinct operator names: the rest are totalled as one")
    threads = tuple(
        ThreadInfo(
            pid=pid,
            tid=tid,
            process=index.processes.get(pid, ""),
            thread=index.threads.get((pid, tid), ""),
            events=n,
        )
        for (pid, tid), n in sorted(index.thread_events.items(), key=lambda kv: (-kv[1], repr(kv[0])))
    )
    return Summary(
        trace=TraceMeta(
            path=str(index.path),
            file_bytes=index.size,
            compressed=index.compressed,
            events=index.events,
            event_bytes=index.event_chars,
            top_level_keys=(
                *index.keys_before_events,
                "traceEvents",
                *(k for k in index.header if k not in index.keys_before_events),
            ),
            rank=_distributed(index, "rank", known),
            world_size=_distributed(index, "world_size", known),
            provenance=known or None,
            parts=tuple(str(p) for p in index.parts),
        ),
        producer=producer,
        window=None if window is None else str(window),
        selected=f"{chosen[0].number}:{chosen[-1].number + 1}",
        steps=stats,
        step_us=_stats([s.dur for s in chosen]),
        # Ties by name: the order names were first seen differs between the readers' paths.
        top_ops=tuple(sorted(ops, key=lambda o: (-o.self_us, o.name))[:top]),
        top_kernels=tuple(sorted(kernels, key=lambda o: (-o.self_us, o.name))[:top]),
        threads=threads,
        bytes_outside_steps=outside,
        notes=tuple(notes),
        device=device,
        bad_times=index.bad_times,
        ops_self_us=round(sum(o.self_us for o in ops), 3),
        kernels_self_us=round(sum(o.self_us for o in kernels), 3),
    )


def _distributed(index: TraceIndex, key: str, origin: dict[str, Any]) -> int | None:
    """``distributedInfo[key]`` when it is a non-negative int (Kineto writes it when
    torch.distributed is initialised; profwin's torch driver always does), else the provenance's."""
    info = index.header.get("distributedInfo")
    value = info.get(key) if isinstance(info, dict) else None
    if value is None:
        value = origin.get(key)
    return value if type(value) is int and 0 <= value < 1 << 31 else None


def _bytes_per_step(index: TraceIndex, by_start: Sequence[Step]) -> tuple[list[int], list[int], int]:
    """Bytes and events starting inside each step (in start order), and bytes outside all."""
    starts = [s.start for s in by_start]
    ends = [s.end for s in by_start]
    if numpy_or_none() is not None:
        return bytes_per_step(index, starts, ends)
    step_bytes = [0] * len(by_start)
    step_events = [0] * len(by_start)
    outside = 0
    right = bisect.bisect_right
    # Where the last event fell: step i, for times in [lo, hi) (hi stops at the next step's
    # start, so the fast path agrees with the lookup). Events mostly come in time order.
    i, lo, hi = -1, math.inf, -math.inf
    for _, lengths, ts_col, _ in index.placed.chunks():
        for length, ts in zip(lengths, ts_col, strict=True):
            if not lo <= ts < hi:
                i = right(starts, ts) - 1
                lo, hi = (
                    (starts[i], min(ends[i], starts[i + 1] if i + 1 < len(starts) else math.inf))
                    if i >= 0
                    else (math.inf, -math.inf)
                )
                if not lo <= ts < ends[i]:
                    outside += length
                    continue
            step_bytes[i] += length
            step_events[i] += 1
    return step_bytes, step_events, outside


def _op_totals(index: TraceIndex, t0: float, t1: float) -> tuple[list[OpStat], list[OpStat]]:
    """Calls and self time per operator and per kernel name, over events starting in ``[t0, t1)``."""
    if numpy_or_none() is not None:
        counts, selfs, totals = op_totals(index, t0, t1)
    else:
        counts, selfs, totals = _op_totals_stdlib(index, t0, t1)
    ops: list[OpStat] = []
    kernels: list[OpStat] = []
    for (name, is_kernel), count, self_us, total in zip(index.names, counts, selfs, totals, strict=True):
        if count:
            stat = OpStat(name=name, count=count, self_us=round(self_us, 3), total_us=round(total, 3))
            (kernels if is_kernel else ops).append(stat)
    return ops, kernels


def _op_totals_stdlib(index: TraceIndex, t0: float, t1: float) -> tuple[list[int], list[float], list[float]]:
    counts = [0] * len(index.names)
    selfs = [0.0] * len(index.names)
    totals = [0.0] * len(index.names)
    for ts_col, self_col, name_col, dur_col in index.timed.chunks():
        for ts, self_us, name_id, dur in zip(ts_col, self_col, name_col, dur_col, strict=True):
            if t0 <= ts < t1:
                counts[name_id] += 1
                selfs[name_id] += self_us
                totals[name_id] += dur
    return counts, selfs, totals


def _stats(durations: Sequence[float]) -> dict[str, float]:
    return {
        "count": len(durations),
        "min": round(min(durations), 3),
        "median": round(statistics.median(durations), 3),
        "mean": round(statistics.fmean(durations), 3),
        "max": round(max(durations), 3),
        "total": round(sum(durations), 3),
    }


# -- text --------------------------------------------------------------------------------------


def _ms(us: float) -> str:
    return f"{us / 1000:.3f} ms"


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def render_device(d: DeviceStat, title: str) -> str:
    """Device busy/idle time, by kind and launch delay, as a few lines of text."""
    kinds = ", ".join(f"{kind} {_ms(us)}" for kind, us in d.by_kind_us.items() if us)
    lines = [
        title,
        f"  busy {_ms(d.busy_us)} of {_ms(d.span_us)} ({100 * d.busy_us / d.span_us if d.span_us else 0:.1f} %), "
        f"idle {_ms(d.idle_us)}; {d.work:,} kernels/copies",
        f"  by kind: {kinds or 'none'}",
    ]
    if d.launch_delay_mean_us is not None:
        lines.append(
            f"  launch delay (call end to kernel start): mean {d.launch_delay_mean_us:.1f} us, "
            f"max {d.launch_delay_max_us:.1f} us ({d.launches:,} matched by correlation id)"
        )
    return "\n".join(lines)


_NAME_WIDTH = 90


def short_name(name: str, width: int = _NAME_WIDTH) -> str:
    """A kernel or operator name for a table: C++ signatures lose ``void``, their argument list
    and the inside of template brackets (``at::native::elementwise_kernel<…>``), then the
    name is cut to ``width`` characters. The JSON output keeps the full name."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    if text.endswith(")") and "(" in text:  # a signature's argument list
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[i], 0)
            if depth == 0:
                text = text[:i] if i > 0 else text
                break
    out, depth = [], 0
    for c in text:
        if c == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(c)
    text = "".join(out).strip() or name
    return text if len(text) <= width else text[: width - 1] + "…"


def render_ops(title: str, rows: Sequence[OpStat], steps: int, all_self: float) -> list[str]:
    """A table like torch's ``key_averages().table()``: self and total time, self % (of
    ``all_self``, every row's self time, listed or not), calls, averages per call and per step
    of the window (``steps`` steps)."""
    if not rows:
        return []
    all_self = all_self or sum(o.self_us for o in rows) or 1.0
    lines = [
        title,
        f"{'self':>12} {'self %':>7} {'total':>12} {'calls':>8} {'self/call':>11} {'total/call':>11} {'self/step':>11}  name",
    ]
    for o in rows:
        calls = o.count or 1
        lines.append(
            f"{_ms(o.self_us):>12} {100 * o.self_us / all_self:>6.1f}% {_ms(o.total_us):>12} {o.count:>8} "
            f"{_us(o.self_us / calls):>11} {_us(o.total_us / calls):>11} {_us(o.self_us / max(steps, 1)):>11}  "
            f"{short_name(o.name)}"
        )
    return lines


def _us(us: float) -> str:
    return f"{us:.1f} us" if us < 10_000 else _ms(us)


@checked
def render_summary(summary: Summary, *, max_steps: int = 40) -> str:
    """The summary as text for a terminal (``profwin summarize`` without ``--json``)."""
    t, s = summary.trace, summary.step_us
    window = "all steps" if summary.window is None else f"window {summary.window}"
    lines = [
        f"trace     {t.path}"
        if not t.parts
        else f"trace     {len(t.parts)} parts of one window: {t.parts[0]} .. {Path(t.parts[-1]).name}",
        f"size      {_size(t.file_bytes)}{' gzip' if t.compressed else ''}, {t.events:,} events, "
        f"{_size(t.event_bytes)} of event JSON",
    ]
    if t.provenance:
        lines.append(f"recorded  {_origin(t.provenance)}")
    lines += [
        f"steps     {len(summary.steps)} {summary.producer} steps "
        f"({summary.steps[0].number}..{summary.steps[-1].number}); summarizing {window} = steps {summary.selected}",
        f"step time {int(s['count'])} steps: min {_ms(s['min'])}, median {_ms(s['median'])}, "
        f"max {_ms(s['max'])}, total {_ms(s['total'])}",
    ]
    annotated = any(st.tokens is not None for st in summary.steps)
    if annotated:
        lines.append(f"tokens    {_held([st.tokens for st in summary.steps if st.in_window], int(s['count']))}")
    lines += [f"note      {note}" for note in summary.notes]
    lines += ["", f"{'step':>6} {'wall':>12} {'events':>8} {'bytes':>10}{_TOKENS_HEADER if annotated else ''}  marker"]
    shown = summary.steps if len(summary.steps) <= max_steps else [st for st in summary.steps if st.in_window][:max_steps]
    marked = summary.window is not None and any(not st.in_window for st in summary.steps)
    for st in shown:
        mark = "*" if st.in_window and marked else " "
        held = _tokens_row(st.tokens) if annotated else ""
        lines.append(f"{st.number:>5}{mark} {_ms(st.dur_us):>12} {st.events:>8} {_size(st.bytes):>10}{held}  {st.label}")
    if len(shown) < len(summary.steps):
        lines.append(f"  ... {len(summary.steps) - len(shown)} more steps (--json lists all)")
    lines.append(f"{'':6} outside any step: {_size(summary.bytes_outside_steps)}")
    if marked:
        lines.append(f"{'':6} * = in the window summarized ({summary.selected}); wall = marker start to end; "
                     "bytes = JSON of the events starting in the step")  # fmt: skip
    else:
        lines.append(f"{'':6} wall = marker start to end; bytes = JSON of the events starting in the step")
    if annotated:
        lines.append(
            f"{'':6} from each step's profwin.tokens annotation: w.step = its index in the token window; decode = requests "
            "producing a response token, tokens = those tokens' indices (min/median/max), in win = how many lie in the "
            "window; prefill = requests prefilling, prompt = their prompt tokens"
        )
    if summary.device is not None:
        lines += ["", render_device(summary.device, f"device time in steps {summary.selected}")]
    steps = int(s["count"])
    for title, rows, total in (
        ("operators", summary.top_ops, summary.ops_self_us),
        ("kernels", summary.top_kernels, summary.kernels_self_us),
    ):
        table = render_ops(f"top {title} by self time in steps {summary.selected} ({steps} steps)", rows, steps, total)
        lines += ["", *table] if table else []
    work = [th for th in summary.threads if not _bookkeeping(th)]
    lines += ["", "threads (events)"]
    lines += [f"  pid {th.pid} tid {th.tid}: {th.process or '?'} / {th.thread or '?'} ({th.events:,})" for th in work]
    hidden = len(summary.threads) - len(work)
    if hidden:
        events = sum(th.events for th in summary.threads if _bookkeeping(th))
        lines.append(f"  (and {hidden} lanes of the profiler's own markers, {events:,} events, not listed)")
    return "\n".join(lines)


_TOKENS_HEADER = f" {'w.step':>6} {'decode':>6} {'tokens':>17} {'in win':>6} {'prefill':>7} {'prompt':>7}"


def _tokens_row(t: StepTokens | None) -> str:
    """A step's annotation as the step table's token columns (blank for a step without one)."""
    if t is None:
        return f" {'-':>6} {'':>6} {'':>17} {'':>6} {'':>7} {'':>7}"
    tokens = "-" if t.token_min is None else f"{t.token_min}/{t.token_median}/{t.token_max}"
    return f" {t.window_step:>6} {t.decoding:>6} {tokens:>17} {t.in_window:>6} {t.prefilling:>7} {t.prefill_tokens:>7}"


def _held(found: Sequence[StepTokens | None], steps: int) -> str:
    """What the window's steps held, from their annotations, in a line."""
    held = [t for t in found if t is not None]
    if not held:
        return f"none of the {steps} steps summarized is annotated"
    decoded = sum(t.decoding for t in held)
    return (
        f"{len(held)} of {steps} steps annotated: {decoded:,} response tokens "
        f"({sum(t.in_window for t in held):,} in the token window, {decoded / len(held):.1f} a step), "
        f"{sum(t.prefill_tokens for t in held):,} prompt tokens of {sum(t.prefilling for t in held):,} prefills"
    )


def _bookkeeping(thread: ThreadInfo) -> bool:
    """Kineto's own lanes (pids ``"Spans"``, ``"Traces"``, ``""``: the profiler's span and
    iteration marks), not a thread of the program: every real process id is an int."""
    return not isinstance(thread.pid, int) and not thread.process and not thread.thread


def _origin(info: dict[str, Any]) -> str:
    """The provenance in a line: who recorded it, which steps, where."""
    parts = []
    engine = info.get("engine")
    if engine:
        parts.append(f"{engine} {info.get('engine_version') or ''}".strip())
    for key, label in (("window", "window"), ("steps", "steps"), ("rank", "rank"), ("session", "session")):
        if info.get(key) is not None:
            parts.append(f"{label} {info[key]}")
    if info.get("source"):
        parts.append(f"trimmed from {info['source']}")
    version = info.get("version")
    return ", ".join(parts) + (f" (by profwin {version})" if version else "")
