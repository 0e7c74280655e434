"""Provenance: what profwin knows about a trace it wrote or collected travels with the file.

How it works, and why: docs/internals.md, ``profwin.provenance``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from profwin.arguments import checked
from profwin.atomic import write_atomic
from profwin.errors import ConfigError
from profwin.formats import Format

__all__ = [
    "PROVENANCE_FORMAT",
    "PROVENANCE_KEY",
    "SIDECAR_SUFFIX",
    "new_session_id",
    "profwin_version",
    "sidecar_path",
    "write_sidecar",
]

PROVENANCE_KEY = "profwin"
"""The top-level key of a trace that holds its provenance."""
SIDECAR_SUFFIX = ".profwin.json"
"""What a sidecar's name adds to its trace's (:func:`sidecar_path`)."""
PROVENANCE_FORMAT = Format("profwin.provenance", version=1)
"""The provenance's format, in a sidecar and under a trace's ``"profwin"`` key alike."""


def profwin_version() -> str:
    """profwin-core's version: the ``version`` a trace written by core's drivers and sessions records."""
    from profwin.installed import version

    return version("profwin-core") or "0+unknown"


def new_session_id() -> str:
    """A session id that sorts by start time: ``20261201T043700Z-3f9a1c``."""
    import secrets  # here: its hmac and OpenSSL imports are 2 ms of every trace command's start

    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


@checked
def sidecar_path(trace: str | Path) -> Path:
    """``<trace>.profwin.json`` next to ``trace``."""
    trace = Path(trace)
    if not trace.name:
        raise ConfigError(f"must name a file (got {str(trace)!r})", path="path")
    return trace.with_name(trace.name + SIDECAR_SUFFIX)


def write_sidecar(trace: str | Path, info: Mapping[str, Any]) -> Path:
    """Write ``info`` (JSON-ready) next to ``trace``, atomically and never through a symbolic
    link (:func:`profwin.atomic.write_atomic`); returns the sidecar's path."""
    path = sidecar_path(trace)
    data = PROVENANCE_FORMAT.stamp({k: v for k, v in info.items() if v is not None})
    return write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
