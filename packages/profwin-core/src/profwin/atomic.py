"""Writing files so that readers never see half of one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path"]


@contextmanager
def atomic_path(final: Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a hidden temporary path next to ``final`` (``.NAME.PID.partial`` + ``suffix``) to
    write to; rename it to ``final`` when the block ends, remove it when the block raises.

    A crash or Ctrl-C while writing never leaves a truncated file under ``final``. ``suffix``
    serves writers that pick a format from the name (torch writes gzip to a ``.gz`` path).
    """
    tmp = final.with_name(f".{final.name}.{os.getpid()}.partial{suffix}")
    try:
        yield tmp
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
