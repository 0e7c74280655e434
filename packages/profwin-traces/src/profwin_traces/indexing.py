"""One pass over a trace into a :class:`~profwin_traces.scan.TraceIndex`: the columnar filler
(:mod:`profwin_traces.columnar`, numpy and msgspec) when it can run, else the row filler.

Its own module so that neither filler imports the other's module back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from profwin.plugin import ConfigError, StepMarker
from profwin_traces.columnar import ColumnFiller, column_decoder
from profwin_traces.reader import Progress, TraceReader, read_trace
from profwin_traces.scan import TraceIndex, _Filler

__all__ = ["file_size", "part_progress", "scan"]


def scan(
    path: str | Path | Sequence[str | Path],
    *,
    progress: Progress | None = None,
    fast: bool = True,
    markers: Sequence[StepMarker] | None = None,
) -> TraceIndex:
    """Read ``path`` once and index it; the caller closes the returned index.

    ``path`` may be the part traces of one window (:mod:`profwin_traces.parts`), in order: their
    events are indexed as one trace's (their times share the process's clock), with the first
    part's path and top-level keys; ``progress`` then counts the bytes of all of them.
    ``markers``: the step markers to look for (default: the registry, :func:`step_markers`).
    """
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    if not paths:
        raise ConfigError("must be a trace file or a window's part files (got none)", path="path")
    decode = column_decoder() if fast else None
    sizes = [file_size(p) for p in paths]
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(
            read_trace(paths[0], progress=progress if len(paths) == 1 else part_progress(progress, 0, sum(sizes)), fast=fast)
        )
        index = TraceIndex(path=first.path, size=sum(sizes) if len(paths) > 1 else first.size, compressed=first.compressed)
        index.parts = tuple(paths) if len(paths) > 1 else ()
        readers = _readers(first, paths, sizes, progress, fast, stack)
        try:
            if decode is not None:
                filler = ColumnFiller(index, markers)
                filler.fill_columns(b for r in readers for b in r.event_batches(decode, native=filler.scanner))
            else:
                _Filler(index, markers).fill(b for r in readers for b in r.record_batches())
        except BaseException:
            index.close()
            raise
        index.header = first.header
        index.keys_before_events = first.keys_before_events
    return index


def _readers(
    first: TraceReader, paths: Sequence[Path], sizes: Sequence[int], progress: Progress | None, fast: bool, stack: Any
) -> Iterator[TraceReader]:
    """``first``, then a reader of each further part, opened when the one before is read."""
    yield first
    for i, part in enumerate(paths[1:], start=1):
        reader = stack.enter_context(read_trace(part, progress=part_progress(progress, sum(sizes[:i]), sum(sizes)), fast=fast))
        yield reader
        reader.close()


def part_progress(progress: Progress | None, done: int, total: int) -> Progress | None:
    """``progress`` of one file among several read as one: the ``done`` bytes before it added,
    out of ``total``."""
    if progress is None:
        return None
    return lambda part_done, _part_total: progress(done + part_done, total)


def file_size(path: Path) -> int:
    """The size of a regular file, else 0: reading it says what is wrong with it (a name too
    long, a folder), naming it, where ``is_file`` would raise."""
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0
