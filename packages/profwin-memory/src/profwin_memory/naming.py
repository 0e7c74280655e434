"""File names of the memory profiler's artifacts, and the first look at a file to be read."""

from __future__ import annotations

import os
import time
from pathlib import Path

from profwin.plugin import ConfigError, ProfileSpec, Window

__all__ = ["artifact_path", "stat_input"]


def artifact_path(spec: ProfileSpec, *, rank: int, steps: Window, suffix: str) -> Path:
    """``{output_dir}/{prefix}_rank{rank}_pid{pid}_w{start}-{end}.{time_ns}{suffix}``.

    Rank and pid tell apart the processes of one job writing into one directory (two ranks of a
    node can share a rank number when ``RANK`` is unset); the timestamp tells apart two sessions
    of one process.
    """
    name = f"{spec.prefix}_rank{rank}_pid{os.getpid()}_{steps.slug()}.{time.time_ns()}{suffix}"
    return spec.output_dir / name


def stat_input(path: Path, what: str) -> None:
    """Check that ``path`` can be looked at before reading it as ``what``: a missing file is
    ``FileNotFoundError`` ("no such file", for every file profwin-memory reads); any other failure
    (a name too long, a folder that cannot be searched) is a :class:`ConfigError` naming it."""
    try:
        path.stat()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}", path="path") from None
