"""``trim``: write a trace holding only the events of a window of steps.

Two streaming passes over the input: the first (:func:`profwin.traces.indexing.scan`) finds the
steps and where each event's text is; the second copies the text of the kept events byte for
byte, without parsing again. Kept are every metadata event (``ph: M``: process and thread names
viewers need), events without a timestamp, and every event overlapping the window's time range
on any thread. The top-level keys are kept, in their order, plus ``"profwin"`` recording the
window and the first step's number (see :mod:`profwin.traces.steps`).

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

from profwin.arguments import checked
from profwin.atomic import atomic_path
from profwin.errors import ConfigError
from profwin.json_form import JsonForm
from profwin.markers import StepMarker
from profwin.provenance import provenance
from profwin.traces.columnar import kept_spans, numpy_or_none
from profwin.traces.indexing import scan
from profwin.traces.reader import Progress, TraceError, read_trace
from profwin.traces.scan import TraceIndex, require_events
from profwin.traces.steps import as_window
from profwin.traces.summarize import TRIM_KEY, selection
from profwin.window import Window

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
    path: str | Path,
    window: Window | str,
    out: str | Path,
    *,
    first_step: int | None = None,
    progress: Progress | None = None,
    markers: Sequence[StepMarker] | None = None,
) -> TrimResult:
    """Write the steps of ``window`` from the trace at ``path`` to ``out``.

    ``first_step`` and ``markers`` work as in :func:`~profwin.traces.summarize`; the output
    records the number of its first step, so later summaries and trims keep the numbers.

    gzip is read by content and written when ``out`` ends in ``.gz``. ``progress(done, total)``
    counts the input's bytes over both passes (``total`` is twice its size). Raises
    :class:`TraceError` for a bad trace or a window holding none of its steps, and
    :class:`~profwin.ConfigError` for a bad ``window`` or ``out``.
    """
    chosen_window = as_window(window)
    if chosen_window is None:
        raise ConfigError("trim needs a window such as '20:80'", path="window")
    source, target = Path(path), Path(out)
    if target.exists() and target.resolve() == source.resolve():
        raise ConfigError(f"the output must not be the input trace ({target})", path="out")
    if not target.parent.is_dir():
        raise ConfigError(f"directory {target.parent} does not exist", path="out")
    size = source.stat().st_size if source.exists() else 0
    first_pass = None if progress is None else (lambda done, _total: progress(done, 2 * size))
    index = scan(source, progress=first_pass, markers=markers)
    try:
        require_events(index)
        producer, _, chosen, t0, t1, notes = selection(index, chosen_window, first_step=first_step)
        meta: dict[str, Any] = {
            **provenance(source, index.header),
            "first_step": chosen[0].number,
            "window": str(chosen_window),
            "steps": f"{chosen[0].number}:{chosen[-1].number + 1}",
            "producer": producer,
            "source": str(source),
        }
        second_pass = None if progress is None else (lambda done, _total: progress(size + done, 2 * size))
        events, written = _write(index, t0, t1, target, meta, second_pass)
    finally:
        index.close()
    return TrimResult(
        path=str(target),
        source=str(source),
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
    index: TraceIndex, t0: float, t1: float, target: Path, meta: dict[str, Any], progress: Progress | None
) -> tuple[int, int]:
    with atomic_path(target) as tmp, _open_out(tmp, gz=target.name.endswith(".gz")) as f:
        header = {k: v for k, v in index.header.items() if k != TRIM_KEY}
        before = [k for k in index.keys_before_events if k != TRIM_KEY]
        # The provenance first, so that a tool reading only the keys before the events sees it.
        f.write(f"{{\n  {json.dumps(TRIM_KEY)}: {json.dumps(meta)},\n")
        for key in before:
            f.write(f"  {json.dumps(key)}: {json.dumps(header[key])},\n")
        f.write('  "traceEvents": [\n  ')
        events = _copy_events(index, _kept(index, t0, t1), f, progress)
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


def _copy_events(index: TraceIndex, kept: Iterator[tuple[int, int]], out: IO[str], progress: Progress | None) -> int:
    """Copy the kept events' text from a second read of the input, joined by ``,``."""
    pending = next(kept, None)
    copied = 0
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
