"""The one pass over a trace that summarize and trim start from: :func:`scan` reads the file once
and fills a :class:`~profwin.traces.scan.TraceIndex`, event by event (:mod:`profwin.traces.scan`)
or, with the ``fast`` extra, a segment of events at a time on numpy columns
(:mod:`profwin.traces.columnar`, which builds on the standard path). It sits above both so
neither imports the other back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from profwin.markers import StepMarker
from profwin.traces.columnar import ColumnFiller, column_decoder
from profwin.traces.reader import Progress, read_trace
from profwin.traces.scan import TraceIndex, _Filler

__all__ = ["scan"]


def scan(
    path: str | Path, *, progress: Progress | None = None, fast: bool = True, markers: Sequence[StepMarker] | None = None
) -> TraceIndex:
    """Read ``path`` once and index it; the caller closes the returned index.

    ``markers``: the step markers to look for (default: the registry, :func:`profwin.discovery.step_markers`).
    """
    decode = column_decoder() if fast else None
    with read_trace(path, progress=progress, fast=fast) as reader:
        index = TraceIndex(path=reader.path, size=reader.size, compressed=reader.compressed)
        try:
            if decode is not None:
                ColumnFiller(index, markers).fill_columns(reader.event_batches(decode))
            else:
                _Filler(index, markers).fill(reader.record_batches())
        except BaseException:
            index.close()
            raise
        index.header = reader.header
        index.keys_before_events = reader.keys_before_events
    return index
