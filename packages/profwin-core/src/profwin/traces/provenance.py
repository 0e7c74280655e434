"""Provenance as the trace tools read it: everything in :mod:`profwin.provenance` (the keys, the
sidecar's reader and writer, session ids) and :func:`peek`, which reads a trace's top-level keys
and so needs the trace reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from profwin.provenance import (
    KEY,
    MAX_SIDECAR_BYTES,
    SIDECAR_SUFFIX,
    first_step_of,
    new_session_id,
    profwin_version,
    provenance,
    read_sidecar,
    sidecar_path,
    write_sidecar,
)

__all__ = [
    "KEY",
    "MAX_SIDECAR_BYTES",
    "SIDECAR_SUFFIX",
    "first_step_of",
    "new_session_id",
    "peek",
    "profwin_version",
    "provenance",
    "read_sidecar",
    "sidecar_path",
    "write_sidecar",
]


def peek(trace: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The provenance of ``trace`` and its top-level keys before the events, without reading
    the events (profwin writes its ``"profwin"`` key there, Kineto its ``distributedInfo``).
    Both ``{}`` when the file cannot be read as a trace."""
    from profwin.traces.reader import TraceError, read_trace

    try:
        with read_trace(trace, fast=False) as reader:
            next(reader.raw_events(), None)
            header = dict(reader.header)
    except (TraceError, RuntimeError):
        return read_sidecar(trace), {}
    return provenance(trace, header), header
