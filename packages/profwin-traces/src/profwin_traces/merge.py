"""``merge``: the traces of one window, every rank or engine its own process, in one trace.

The traces each rank (or engine) wrote of one window, in one file Perfetto opens, with the steps
lined up. Two streaming passes over each input, one input at a time, so memory does not grow
with the traces or their number: the first (:func:`profwin_traces.indexing.scan`) finds its
steps; the second decodes its events a buffer at a time and writes them out, moved:

- **one process per input**: every event of input *k* gets ``pid`` *k* + 1; each of its
  ``(pid, tid)`` lanes (host threads, GPU streams, the profiler's own lanes) becomes a thread of
  that process, named ``<its process's label or name> / <its thread's name>``, and the process is
  named after the input (``rank 3: <file>``). The inputs' own process and thread metadata are
  folded into those names;
- **aligned on the window's first step**: each input's times move by one constant, so that the
  window's first step (the first step number every input holds, in the window when one is
  given) starts at the same instant as on the first input. Times within an input keep their
  exact differences; across inputs only that step's start is made equal, since clocks of
  different nodes (and processes) have different origins;
- **ids kept apart**: flow ids (``id`` of flow and async events, ``bind_id``) and ``args.correlation``
  become ``id * inputs + k``, so that a flow or a launch never pairs with another input's;
- everything else (names, categories, args, step markers, ``profwin.tokens`` annotations) as it was.

With a window, each input keeps the events that overlap its steps of the window (trim's rule);
without, every event from its first aligned step on. The output is written under a hidden name
and renamed into place when complete, gzip (level 3) when its name ends in ``.gz``.

**One view** (``timelines``, ``profwin merge --timeline``): each session timeline given
(:mod:`profwin_traces.timeline`) joins the merged trace as a process of its own, on the same clock
as its rank's trace (its step that the traces are aligned on starts at the same instant): counter
tracks ``batch`` (requests in the step), ``tokens`` (produced per step), ``prefill tokens``,
``waiting`` and ``running`` (where the engine has them), one slice per request (admission to its
last token, on as many lanes as overlap), the phases (ramp, steady, tail) and the window's steps as
slices of their own: the kernels of the window inside the whole rollout, in one file.
"""

from __future__ import annotations

import gzip
import json
import math
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, cast

from attrs import frozen

from profwin.plugin import ConfigError, JsonForm, StepMarker, Window, checked, shown
from profwin.plugin.files import PROVENANCE_FORMAT, atomic_path, check_output_path
from profwin_traces.indexing import scan
from profwin_traces.provenance import provenance, traces_version
from profwin_traces.ranks import pick_session, rank_hint, trace_files
from profwin_traces.reader import Progress, TraceError, fast_module, read_trace
from profwin_traces.scan import require_events
from profwin_traces.steps import Step, as_window
from profwin_traces.summarize import TRIM_KEY, step_table, time_range

__all__ = ["MergeResult", "MergedTrace", "merge"]

_GZIP_LEVEL = 3  # as trim writes
_FLOWS = frozenset("stfbne")  # phases whose "id" pairs events: flows (s, t, f) and async spans (b, n, e)
_NOT_MOVED = frozenset({"distributedInfo", TRIM_KEY})  # one rank's facts: not the merged trace's


@frozen
class MergedTrace:
    """One input of :func:`merge`, and where it went."""

    path: str
    pid: int
    """Its process in the merged trace."""
    label: str
    """The process's name: ``rank <r>: <file name>`` (or the file name when the rank is unknown)."""
    rank: int | None
    producer: str
    steps: str
    """The steps kept, as a window (``"20:80"``)."""
    shift_us: float
    """Added to each of its times: its aligned step's start to the first input's."""
    events: int
    """Events written (its own metadata folded into the process's)."""


@frozen
class MergeResult(JsonForm):
    """What :func:`merge` wrote."""

    path: str
    window: str | None
    """The window asked for (``None``: every step)."""
    aligned_step: int
    """The step whose start is made the same on every input."""
    traces: tuple[MergedTrace, ...]
    events: int
    """Events written, metadata included."""
    bytes: int
    """Size of the output file."""
    notes: tuple[str, ...]


@frozen
class _Input:
    """What the first pass found in one input."""

    path: Path
    rank: int | None
    producer: str
    steps: tuple[Step, ...]
    device: tuple[Step, ...]
    header: dict[str, Any]
    keys_before_events: tuple[str, ...]


@checked
def merge(
    paths: Sequence[str | Path],
    out: str | Path,
    *,
    window: Window | str | None = None,
    first_step: int | None = None,
    session: str | None = None,
    progress: Callable[[Path, int], Progress | None] | None = None,
    markers: Sequence[StepMarker] | None = None,
    timelines: Sequence[str | Path] = (),
) -> MergeResult:
    """Write the traces in ``paths`` (files, folders of them, a ``profwin collect`` folder) to
    ``out`` as one trace, each its own process, aligned on the window's first step (see the module);
    ``timelines`` (session timeline files or folders) join it as processes of their own.

    ``window`` keeps those steps only; ``first_step``, ``session`` and ``markers`` work as in
    :func:`~profwin_traces.summarize_ranks` (traces without step markers are left out with a
    note). ``progress(path, pass)`` gives each input's progress callback for pass 1 or 2.
    Raises :class:`TraceError` for an unreadable trace, traces without steps or sharing none, and
    :class:`~profwin.ConfigError` for a bad window or output path.
    """
    chosen_window = as_window(window)
    target = check_output_path(out)
    files, notes = pick_session(trace_files(paths), session)
    for given in files:
        if target.exists() and given.exists() and target.resolve() == given.resolve():
            raise ConfigError(f"the output must not be one of the input traces ({shown(str(target))})", path="out")
    read: list[Any] = []
    if timelines:
        from profwin_traces.timeline import read_timelines

        read, timeline_notes = read_timelines(timelines, session=session)
        notes += timeline_notes
    with tempfile.TemporaryDirectory(prefix=".profwin-merge-", dir=target.parent) as scratch:
        joined, shown_as = _joined_parts(files, Path(scratch), chosen_window, first_step, markers)
        return _merge(joined, shown_as, target, chosen_window, first_step, markers, progress, notes, read)


def _joined_parts(
    files: Sequence[Path], scratch: Path, window: Window | None, first_step: int | None, markers: Sequence[StepMarker] | None
) -> tuple[list[Path], dict[Path, tuple[str, str]]]:
    """The inputs, a long window's parts read as one trace: each window whose parts are given is
    trimmed into one file in ``scratch`` first (:func:`~profwin_traces.trim` reads parts as one),
    which is then merged like any trace; ``shown_as`` names it by its parts (path, file name)."""
    from profwin_traces.ranks import window_parts
    from profwin_traces.trim import trim

    joined: list[Path] = []
    shown_as: dict[Path, tuple[str, str]] = {}
    for unit in window_parts(files):
        if len(unit) == 1:
            joined.append(unit[0])
            continue
        one = scratch / f"{len(joined)}-{unit[0].name}"
        trim(list(unit), window or Window(), one, first_step=first_step, markers=markers)
        joined.append(one)
        shown_as[one] = (str(unit[0]), f"{unit[0].name} and {len(unit) - 1} more part(s) of its window")
    return joined, shown_as


def _merge(
    files: Sequence[Path],
    shown_as: dict[Path, tuple[str, str]],
    target: Path,
    chosen_window: Window | None,
    first_step: int | None,
    markers: Sequence[StepMarker] | None,
    progress: Callable[[Path, int], Progress | None] | None,
    notes: list[str],
    timelines: Sequence[Any] = (),
) -> MergeResult:
    inputs = []
    for path in files:
        found = _first_pass(path, first_step, markers, _pass(progress, path, 1))
        if found is None:
            notes.append(f"{shown_as.get(path, (str(path), path.name))[1]}: no step markers; left out")
        else:
            inputs.append(found)
    if not inputs:
        raise TraceError(", ".join(shown_as.get(p, (str(p), ""))[0] for p in files), "no trace with step markers")
    inputs.sort(key=lambda i: (i.rank is None, i.rank or 0, str(i.path)))
    if len({i.producer for i in inputs}) > 1:
        notes.append(f"the traces were numbered by different markers: {sorted({i.producer for i in inputs})}")
    aligned = _aligned_step(inputs, chosen_window)
    reference = next(s for s in inputs[0].steps if s.number == aligned).start
    meta: dict[str, Any] = {
        "merged": [shown_as.get(i.path, (str(i.path), ""))[0] for i in inputs],
        "first_step": aligned,
        "window": None if chosen_window is None else str(chosen_window),
        "producer": inputs[0].producer,
        "version": traces_version(),
    }
    end = None if chosen_window is None else chosen_window.end
    plans = []
    for k, found in enumerate(inputs):
        kept = [s for s in found.steps if s.number >= aligned and (end is None or s.number < end)]
        t0, t1 = time_range(kept, found.device)
        if chosen_window is None:  # every event from the aligned step on; all of them when it is the first
            t0, t1 = (-math.inf if kept[0] is found.steps[0] else t0), math.inf
        start = next(s for s in kept if s.number == aligned).start
        plans.append((k, found, kept, t0, t1, reference - start))
    last = max(s.number for _, _, kept, *_ in plans for s in kept)
    meta["steps"] = f"{aligned}:{last + 1}"
    if chosen_window is not None and (chosen_window.start < aligned or (chosen_window.end or 0) > last + 1):
        notes.append(f"window {chosen_window} clipped to the steps the traces hold: {aligned}:{last + 1}")
    written: list[MergedTrace] = []
    with atomic_path(target) as tmp, _open_out(tmp, gz=target.name.endswith(".gz")) as f:
        header = {key: value for key, value in inputs[0].header.items() if key not in _NOT_MOVED}
        before = [key for key in inputs[0].keys_before_events if key in header]
        f.write(f"{{\n  {json.dumps(TRIM_KEY)}: {json.dumps(PROVENANCE_FORMAT.stamp(meta))},\n".encode())
        for key in before:
            f.write(f"  {json.dumps(key)}: {json.dumps(header[key])},\n".encode())
        f.write(b'  "traceEvents": [\n  ')
        first = True
        for k, found, kept, t0, t1, shift in plans:
            name = shown_as.get(found.path, (str(found.path), found.path.name))[1]
            label = f"rank {found.rank}: {name}" if found.rank is not None else name
            events = 0
            for chunk, count in _moved(found, k, len(plans), label, (t0, t1, shift), _pass(progress, found.path, 2)):
                f.write(chunk if first else b",\n  " + chunk)
                first = False
                events += count
            written.append(
                MergedTrace(
                    path=shown_as.get(found.path, (str(found.path), ""))[0], pid=k + 1, label=label, rank=found.rank, producer=found.producer,
                    steps=f"{kept[0].number}:{kept[-1].number + 1}", shift_us=round(shift, 3), events=events,
                )
            )  # fmt: skip
        if timelines:
            from profwin_traces.timeline import timeline_events

            encode = _encoder()
            for j, timeline in enumerate(timelines):
                added, said = timeline_events(timeline, pid=len(plans) + 1 + j, aligned=aligned, at=reference)
                notes += said
                if added:
                    f.write(b",\n  " + b",\n  ".join(encode(e) for e in added))
                    written.append(
                        MergedTrace(
                            path=str(timeline.paths[0]), pid=len(plans) + 1 + j, label=f"timeline: {timeline.label}",
                            rank=timeline.header.get("rank"), producer="profwin.timeline", steps=f"0:{len(timeline.steps)}",
                            shift_us=0.0, events=len(added),
                        )
                    )  # fmt: skip
        f.write(b"\n  ]")
        for key in [k for k in header if k not in before]:
            f.write(f",\n  {json.dumps(key)}: {json.dumps(header[key])}".encode())
        f.write(b"\n}\n")
    return MergeResult(
        path=str(target),
        window=None if chosen_window is None else str(chosen_window),
        aligned_step=aligned,
        traces=tuple(written),
        events=sum(t.events for t in written),
        bytes=target.stat().st_size,
        notes=tuple(notes),
    )


def _pass(progress: Callable[[Path, int], Progress | None] | None, path: Path, number: int) -> Progress | None:
    return None if progress is None else progress(path, number)


def _first_pass(
    path: Path, first_step: int | None, markers: Sequence[StepMarker] | None, progress: Progress | None
) -> _Input | None:
    """The steps of the trace at ``path``, or ``None`` when it has no step markers."""
    index = scan(path, progress=progress, markers=markers)
    try:
        require_events(index)
        producer, steps, device = step_table(index, first_step)
    finally:
        index.close()
    if producer is None:
        return None
    origin = provenance(path, index.header)
    return _Input(
        path=path,
        rank=rank_hint(path, origin, index.header),
        producer=producer,
        steps=tuple(steps),
        device=tuple(device),
        header=index.header,
        keys_before_events=tuple(index.keys_before_events),
    )


def _aligned_step(inputs: Sequence[_Input], window: Window | None) -> int:
    """The first step number every input holds (in ``window``, when one is given)."""
    common = set.intersection(*({s.number for s in i.steps} for i in inputs))
    if window is not None:
        common = {n for n in common if window.contains(n)}
    if not common:
        held = "; ".join(f"{i.path.name}: {_span(i.steps)}" for i in inputs)
        where = "" if window is None else f" in window {window}"
        raise TraceError(
            ", ".join(str(i.path) for i in inputs),
            f"the traces share no step number{where}, so they cannot be lined up on one ({held}); "
            "give traces of one window, or --first-step where a trace's numbering is not its own",
        )
    return min(common)


def _span(steps: Sequence[Step]) -> str:
    return f"steps {steps[0].number}..{steps[-1].number}"


def _open_out(path: Path, *, gz: bool) -> IO[bytes]:
    try:
        if gz:
            return cast("IO[bytes]", gzip.open(path, "wb", compresslevel=_GZIP_LEVEL))
        return open(path, "wb")
    except OSError as exc:
        raise ConfigError(f"cannot write {path.parent}: {exc.strerror or exc}", path="out") from None


def _encoder() -> Callable[[Any], bytes]:
    """JSON of one event: msgspec's encoder with the ``fast`` extra, else the standard library's."""
    msgspec = fast_module("msgspec")
    if msgspec is not None:
        encode: Callable[[Any], bytes] = msgspec.json.Encoder().encode
        return encode
    return lambda event: json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode()


def _decoded(path: Path, progress: Progress | None) -> Iterator[list[dict[str, Any]]]:
    """The events of ``path`` as dicts, a buffer at a time (one at a time without msgspec)."""
    msgspec = fast_module("msgspec")
    with read_trace(path, progress=progress, fast=msgspec is not None) as reader:
        if msgspec is None:
            for event in reader.events():
                yield [event]
            return
        decode = msgspec.json.Decoder(list[dict[str, Any]]).decode
        for events, _, _ in reader.event_batches(decode):
            yield events


def _moved(
    found: _Input, k: int, n: int, label: str, move: tuple[float, float, float], progress: Progress | None
) -> Iterator[tuple[bytes, int]]:
    """The events of input ``k`` (of ``n``) that overlap ``[t0, t1)``, moved by ``shift`` (``move``)
    and the rest (see the module): a buffer's worth of JSON at a time, joined by ``",\\n  "``, and
    how many; then the metadata of its process and threads."""
    t0, t1, shift = move
    encode = _encoder()
    pid = k + 1
    lanes: dict[tuple[Any, Any], int] = {}
    processes: dict[Any, dict[str, Any]] = {}
    threads: dict[tuple[Any, Any], dict[str, Any]] = {}
    for batch in _decoded(found.path, progress):
        out = []
        for event in batch:
            ph = event.get("ph")
            if ph == "M":
                _remember(event, processes, threads)
                continue
            start = _time(event.get("ts"))
            if start is not None:
                dur = _time(event.get("dur")) if ph == "X" else None
                stop = start + dur if dur is not None and dur >= 0.0 else start
                if not (start < t1 and (stop > t0 or start >= t0)):
                    continue
                event["ts"] = round(start + shift, 3)
            key = (event.get("pid"), event.get("tid"))
            tid = lanes.get(key)
            if tid is None:
                tid = lanes[key] = len(lanes) + 1
            event["pid"], event["tid"] = pid, tid
            if ph in _FLOWS and "id" in event:
                event["id"] = _apart(event["id"], k, n)
            if "bind_id" in event:
                event["bind_id"] = _apart(event["bind_id"], k, n)
            args = event.get("args")
            if type(args) is dict and "correlation" in args:
                args["correlation"] = _apart(args["correlation"], k, n)
            out.append(encode(event))
        if out:
            yield b",\n  ".join(out), len(out)
    metadata = _metadata(pid, label, lanes, processes, threads)
    yield b",\n  ".join(encode(m) for m in metadata), len(metadata)


def _time(value: Any) -> float | None:
    """A finite ``ts`` or ``dur`` as a float (numbers written as strings too), else ``None``."""
    if type(value) is float or type(value) is int:
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _apart(value: Any, k: int, n: int) -> Any:
    """An id of input ``k`` of ``n``, made unlike every other input's."""
    if type(value) is int:
        return value * n + k
    return value if n == 1 else f"{value}:{k}"


def _remember(
    event: dict[str, Any], processes: dict[Any, dict[str, Any]], threads: dict[tuple[Any, Any], dict[str, Any]]
) -> None:
    """Keep what an input's metadata event says about its processes and threads (bounded: one
    entry per process or thread the scan accepted)."""
    args = event.get("args")
    name = event.get("name")
    if type(args) is not dict or name not in ("process_name", "process_labels", "process_sort_index", "thread_name",
                                               "thread_sort_index"):  # fmt: skip
        return
    try:
        if name.startswith("process"):
            processes.setdefault(event.get("pid"), {}).update(args)
        else:
            threads.setdefault((event.get("pid"), event.get("tid")), {}).update(args)
    except TypeError:  # an unhashable pid or tid: the scan refused such a trace already
        return


def _metadata(
    pid: int,
    label: str,
    lanes: dict[tuple[Any, Any], int],
    processes: dict[Any, dict[str, Any]],
    threads: dict[tuple[Any, Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The merged process's name and order, and a name and an order for each of its threads:
    the input's processes first by their own sort index (Kineto puts the CPU before the GPUs),
    then its threads by theirs."""
    found = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": label}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
    ]

    def order(key: tuple[Any, Any]) -> tuple[Any, ...]:
        process, thread = processes.get(key[0], {}), threads.get(key, {})
        return (_sortable(process.get("sort_index")), str(key[0]), _sortable(thread.get("sort_index")), str(key[1]))

    for place, key in enumerate(sorted(lanes, key=order)):
        process, thread = processes.get(key[0], {}), threads.get(key, {})
        owner = process.get("labels") or process.get("name") or f"pid {key[0]}"
        name = f"{owner} / {thread.get('name') or f'tid {key[1]}'}"
        tid = lanes[key]
        found.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name.strip()}})
        found.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": place}})
    return found


def _sortable(value: Any) -> tuple[int, float]:
    return (0, float(value)) if type(value) in (int, float) else (1, 0.0)
