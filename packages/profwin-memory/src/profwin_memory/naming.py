"""File names of the memory profiler's artifacts."""

from __future__ import annotations

import os
import time
from pathlib import Path

from profwin.plugin import ProfileSpec, Window

__all__ = ["artifact_path"]


def artifact_path(spec: ProfileSpec, *, rank: int, steps: Window, suffix: str) -> Path:
    """``{output_dir}/{prefix}_rank{rank}_pid{pid}_w{start}-{end}.{time_ns}{suffix}``.

    Rank and pid tell apart the processes of one job writing into one directory (two ranks of a
    node can share a rank number when ``RANK`` is unset); the timestamp tells apart two sessions
    of one process.
    """
    name = f"{spec.prefix}_rank{rank}_pid{os.getpid()}_{steps.slug()}.{time.time_ns()}{suffix}"
    return spec.output_dir / name
