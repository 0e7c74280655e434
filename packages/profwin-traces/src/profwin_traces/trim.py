"""``trim``: write a trace holding only the events of a window of steps.

Two streaming passes over the input: the first (:func:`profwin_traces.indexing.scan`) finds the
steps and where each event's text is; the second copies the text of the kept events byte for
byte, without parsing again. Kept are every metadata event (``ph: M``: process and thread names
viewers need), events without a timestamp, and every event overlapping the window's time range
on any thread. The top-level keys are kept, in their order, plus ``"profwin"`` recording the
window and the first step's number (see :mod:`profwin_traces.steps`).

The output is written under a hidden temporary name in the destination directory and renamed
into place when complete: an error or an interrupt never leaves a partial file under ``out``.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from attrs import frozen

from profwin.plugin import ConfigError, JsonForm, StepMarker, Window, checked
from profwin.plugin.files import PROVENANCE_FORMAT, atomic_path
from profwin_traces.columnar import kept_spans, numpy_or_none
from profwin_traces.indexing import file_size, part_progress, scan
from profwin_traces.parts import check_numbers
from profwin_traces.provenance import provenance
from profwin_traces.ranks import window_parts
from profwin_traces.reader import Progress, TraceError, read_trace
from profwin_traces.scan import TraceIndex, require_events
from profwin_traces.steps import as_window
from profwin_traces.summarize import TRIM_KEY, selection

__all__ = ["TrimResult", "trim"]

_GZIP_LEVEL = 3  # near level 6's size at about twice its speed on trace JSON


@frozen
class TrimResult(JsonForm):
    """What :func:`trim` wrote."""

    path: str
    source: str
    producer: str
    window: str
    """The window asked for."""
    steps: str
    """The steps written, as a window (``"20:80"``), after clipping to the trace."""
    step_count: int
    events: int
    """Events written (metadata included)."""
    bytes: int
    """Size of the output file."""
    start_us: float
    end_us: float
    """The time range kept, in the trace's microseconds."""
    notes: tuple[str, ...]


@checked
def trim(
    path: str | Path | Sequence[str | Path],
    window: Window | str,
    out: str | Path,
    *,
    first_step: int | None = None,
    progress: Progress | None = None,
    markers: Sequence[StepMarker] | None = None,
) -> TrimResult:
    """Write the steps of ``window`` from the trace at ``path`` to ``out``.

    ``first_step`` and ``markers`` work as in :func:`~profwin_traces.summarize`; the output
    records the number of its first step, so later summaries and trims keep the numbers.

    ``path`` may be the part traces of one long window (files in order, or their folder,
    :mod:`profwin_traces.parts`): the window is cut from them as from one trace, into one file.

    gzip is read by content and written when ``out`` ends in ``.gz``. ``progress(done, total)``
    counts the input's bytes over both passes (``total`` is twice its size). Raises
    :class:`TraceError` for a bad trace or a window holding none of its steps, and
    :class:`~profwin.ConfigError` for a bad ``window`` or ``out``.
    """
    chosen_window = as_window(window)
    if chosen_window is None:
        raise ConfigError("trim needs a window such as '20:80'", path="window")
    sources = _one_window(path)
    source, target = sources[0], Path(out)
    for given in sources:
        if target.exists() and target.resolve() == given.resolve():
            raise ConfigError(f"the output must not be the input trace ({target})", path="out")
    if not target.parent.is_dir():
        raise ConfigError(f"directory {target.parent} does not exist", path="out")
    size = sum(file_size(s) for s in sources)
    first_pass = None if progress is None else _passes(progress, sources, 0, size)
    indexes: list[TraceIndex] = []
    try:
        for i, given in enumerate(sources):
            indexes.append(scan(given, progress=first_pass(i) if first_pass else None, markers=markers))
            require_events(indexes[-1])
        if len(indexes) > 1:
            check_numbers(source, indexes)
        producer, _, chosen, t0, t1, notes = selection(indexes, chosen_window, first_step=first_step)
        meta: dict[str, Any] = {
            **{k: v for k, v in provenance(source, indexes[0].header).items() if k != "part"},
            "first_step": chosen[0].number,
            "window": str(chosen_window),
            "steps": f"{chosen[0].number}:{chosen[-1].number + 1}",
            "producer": producer,
            "source": str(source),
        }
        if len(sources) > 1:
            meta["source_parts"] = [s.name for s in sources]
        second_pass = None if progress is None else _passes(progress, sources, size, size)
        events, written = _write(indexes, t0, t1, target, meta, second_pass)
    finally:
        for index in indexes:
            index.close()
    return TrimResult(
        path=str(target),
        source=str(source) if len(sources) == 1 else f"{source} .. {sources[-1].name} ({len(sources)} parts)",
        producer=producer,
        window=str(chosen_window),
        steps=meta["steps"],
        step_count=len(chosen),
        events=events,
        bytes=written,
        start_us=t0,
        end_us=t1,
        notes=tuple(notes),
    )


def _one_window(path: str | Path | Sequence[str | Path]) -> list[Path]:
    """The file to trim, or the parts of one window in order; anything else is a :class:`TraceError`."""
    given = [path] if isinstance(path, (str, Path)) else list(path)
    if len(given) == 1 and not Path(given[0]).is_dir():
        return [Path(given[0])]  # one file: read as it is, whatever its provenance says
    units = window_parts(given)
    if len(units) != 1:
        raise TraceError(
            ", ".join(str(p) for p in given),
            f"holds {len(units)} traces; trim takes one trace, or the parts of one window (their folder or their files)",
        )
    return list(units[0])


def _passes(progress: Progress, sources: Sequence[Path], before: int, size: int) -> Any:
    """``progress`` for the part ``i`` of one pass: the bytes of the parts before it, after ``before``."""
    sizes = [file_size(s) for s in sources]

    def of(i: int) -> Progress | None:
        return part_progress(progress, before + sum(sizes[:i]), 2 * size)

    return of


def _kept(index: TraceIndex, t0: float, t1: float) -> Iterator[tuple[int, int]]:
    """``(offset, length)`` of each kept event, in file order."""
    if numpy_or_none() is not None:
        yield from kept_spans(index, t0, t1)
        return
    for offsets, lengths, starts, ends in index.placed.chunks():
        for offset, length, start, end in zip(offsets, lengths, starts, ends, strict=True):
            # Overlap with [t0, t1); an instant (end == start) at t0 counts, an event ending there does not.
            if start < t1 and (end > t0 or start >= t0):
                yield offset, length


def _write(
    indexes: Sequence[TraceIndex], t0: float, t1: float, target: Path, meta: dict[str, Any], progress: Any
) -> tuple[int, int]:
    index = indexes[0]
    with atomic_path(target) as tmp, _open_out(tmp, gz=target.name.endswith(".gz")) as f:
        header = {k: v for k, v in index.header.items() if k != TRIM_KEY}
        before = [k for k in index.keys_before_events if k != TRIM_KEY]
        # The provenance first, so that a tool reading only the keys before the events sees it.
        f.write(f"{{\n  {json.dumps(TRIM_KEY)}: {json.dumps(PROVENANCE_FORMAT.stamp(meta))},\n")
        for key in before:
            f.write(f"  {json.dumps(key)}: {json.dumps(header[key])},\n")
        f.write('  "traceEvents": [\n  ')
        events = 0
        for i, part in enumerate(indexes):
            events = _copy_events(part, _kept(part, t0, t1), f, progress(i) if progress else None, copied=events)
        f.write("\n  ]")
        for key in [k for k in header if k not in before]:
            f.write(f",\n  {json.dumps(key)}: {json.dumps(header[key])}")
        f.write("\n}\n")
    return events, target.stat().st_size


def _open_out(path: Path, *, gz: bool) -> IO[str]:
    try:
        if gz:
            return gzip.open(path, "wt", encoding="utf-8", compresslevel=_GZIP_LEVEL)
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path.parent}: {exc.strerror or exc}", path="out") from None


def _copy_events(
    index: TraceIndex, kept: Iterator[tuple[int, int]], out: IO[str], progress: Progress | None, *, copied: int = 0
) -> int:
    """Copy the kept events' text from a second read of the input, joined by ``,``; returns
    ``copied`` (the events already written to ``out``) plus those."""
    pending = next(kept, None)
    continuing = False  # the pending event began in an earlier chunk
    with read_trace(index.path, progress=progress) as reader:
        for base, text in reader.text_chunks():
            parts = []
            while pending is not None and pending[0] < base + len(text):
                offset, length = pending
                start = offset - base
                if not continuing and copied:
                    parts.append(",\n  ")
                parts.append(text[start : start + length])
                if start + length > len(text):
                    pending = (base + len(text), start + length - len(text))
                    continuing = True
                    break
                continuing = False
                copied += 1
                pending = next(kept, None)
            out.write("".join(parts))
    if pending is not None:
        raise TraceError(index.path, "the file ended early on the second read: did it change while trim ran?")
    return copied
