"""A progress line on stderr for long reads, shown only to a person watching a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from profwin.plugin import ConfigError, checked, shown
from profwin_traces.reader import Progress

__all__ = ["MIN_BYTES", "tty_progress"]

MIN_BYTES = 8 << 20
"""Files smaller than this read in about a second: no progress line for them."""

_INTERVAL_S = 0.2


@checked(own=("stream",))
def tty_progress(label: str, *, stream: TextIO | None = None, min_bytes: int = MIN_BYTES, passes: int = 1) -> Progress | None:
    """A ``progress(done, total)`` callback printing ``label: 42% (420/1000 MiB)`` on ``stream``
    (stderr by default), or ``None`` when ``stream`` is not a terminal.

    ``passes``: the reads ``total`` counts (trim reads its input twice: ``total`` is twice the
    file); the line then shows the pass and the file's own size, ``label: 71% (pass 2 of 2,
    420/1000 MiB)``. Totals under ``min_bytes`` print nothing; the line is redrawn at most five
    times a second and ends, once, with a newline at 100 %.
    """
    if stream is not None and not all(callable(getattr(stream, m, None)) for m in ("write", "flush", "isatty")):
        raise ConfigError(f"must be a text stream (write, flush, isatty) or None (got {shown(stream)})", path="stream")
    out = sys.stderr if stream is None else stream
    if not out.isatty():
        return None
    last = [0.0]
    finished = [False]

    def progress(done: int, total: int) -> None:
        if total < min_bytes or finished[0]:
            return
        now = time.monotonic()
        done = min(done, total)
        if done < total and now - last[0] < _INTERVAL_S:
            return
        last[0] = now
        size = total // passes
        current = max(1, -(-done * passes // total))  # the pass in progress (a pass's end still counts as it)
        where = f"pass {current} of {passes}, " if passes > 1 else ""
        within = done - (current - 1) * size
        out.write(f"\r{label}: {100 * done // total:3d}% ({where}{within >> 20}/{size >> 20} MiB)")
        if done >= total:
            finished[0] = True
            out.write("\n")
        out.flush()

    return progress
