"""A progress line on stderr for long reads, shown only to a person watching a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from profwin.traces.reader import Progress

__all__ = ["MIN_BYTES", "tty_progress"]

MIN_BYTES = 8 << 20
"""Files smaller than this read in about a second: no progress line for them."""

_INTERVAL_S = 0.2


def tty_progress(label: str, *, stream: TextIO | None = None, min_bytes: int = MIN_BYTES) -> Progress | None:
    """A ``progress(done, total)`` callback printing ``label: 42% (420/1000 MiB)`` on ``stream``
    (stderr by default), or ``None`` when ``stream`` is not a terminal.

    Totals under ``min_bytes`` print nothing; the line is redrawn at most five times a second
    and ends with a newline when ``done`` reaches ``total``.
    """
    out = sys.stderr if stream is None else stream
    if not out.isatty():
        return None
    last = [0.0]

    def progress(done: int, total: int) -> None:
        if total < min_bytes:
            return
        now = time.monotonic()
        finished = done >= total
        if not finished and now - last[0] < _INTERVAL_S:
            return
        last[0] = now
        out.write(f"\r{label}: {100 * done // total:3d}% ({done >> 20}/{total >> 20} MiB)")
        if finished:
            out.write("\n")
        out.flush()

    return progress
