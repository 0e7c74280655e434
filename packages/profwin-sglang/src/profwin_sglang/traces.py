"""The files an SGLang profiling session writes: finding them, counting their batches, trimming.

SGLang 0.5.23 names them (``srt/managers/scheduler_components/profiler_manager.py``)::

    {prefix}-{profile_id}-TP-{tp}[-DP-{dp}][-PP-{pp}][-EP-{ep}][-EXTEND|-DECODE].trace.json.gz
    merged-{profile_id}.trace.json.gz                      (merge_profiles, written by rank 0)
    {prefix}-{time.time()}-TP-{tp}-memory[-EXTEND|-DECODE].pickle        (MEM: no profile_id)

Each scheduler batch's forward is one ``step[MODE bs=... ]`` span (``profile_range`` in
``model_runner``), inside the scheduler's ``scheduler.run_batch`` span: that is what a "step" is.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from profwin.plugin_api import Artifact
from profwin.window import Window

__all__ = ["count_steps", "find_artifacts", "step_names", "trim_trace"]

_STEP = "step["
_RUN_BATCH = "scheduler.run_batch"
_TP = re.compile(r"-TP-(\d+)")


def _load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") if path.suffix == ".gz" else open(path) as handle:
        data = json.load(handle)
    return data if isinstance(data, dict) else {"traceEvents": data}


def _spans(events: Iterable[dict[str, Any]], prefix: str, exact: bool = False) -> list[dict[str, Any]]:
    found = [
        e
        for e in events
        if e.get("ph") == "X"
        and isinstance(e.get("name"), str)
        and (e["name"] == prefix if exact else e["name"].startswith(prefix))
    ]
    return sorted(found, key=lambda e: float(e.get("ts", 0)))


def step_names(path: str | os.PathLike[str]) -> list[str]:
    """The ``step[...]`` span names of a chrome trace, in time order (one per scheduler batch)."""
    return [e["name"] for e in _spans(_load(Path(path)).get("traceEvents", []), _STEP)]


def count_steps(path: str | os.PathLike[str]) -> int:
    """How many scheduler batches a chrome trace holds."""
    return len(step_names(path))


def trim_trace(path: str | os.PathLike[str], keep: Window) -> int:
    """Cut a trace down to its batches ``keep`` (0-based positions among its batches), in place.

    A batch starts with its ``scheduler.run_batch`` span (where SGLang itself starts and stops the
    profiler) or, without one, with its ``step[...]`` span. Events that begin before batch
    ``keep.start`` or at/after batch ``keep.end`` are dropped; metadata events stay. Returns the
    number of batches left.
    """
    path = Path(path)
    data = _load(path)
    events: list[dict[str, Any]] = data.get("traceEvents", [])
    steps = _spans(events, _STEP)
    starts = [float(s["ts"]) for s in steps]
    run_batches = _spans(events, _RUN_BATCH, exact=True)
    if len(run_batches) >= len(steps):
        # Use the enclosing run_batch span of each step when there is one.
        starts = [_enclosing_start(float(s["ts"]), run_batches) for s in steps]
    first = float("inf") if keep.start >= len(starts) else starts[keep.start]
    if keep.start == 0:
        first = float("-inf")
    last = float("inf") if keep.end is None or keep.end >= len(starts) else starts[keep.end]
    data["traceEvents"] = [e for e in events if e.get("ph") == "M" or "ts" not in e or first <= float(e["ts"]) < last]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".profwin-trim-", suffix=path.suffix)
    os.close(fd)
    with gzip.open(tmp, "wt") if path.suffix == ".gz" else open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)
    kept_end = len(starts) if keep.end is None else min(keep.end, len(starts))
    return max(kept_end - keep.start, 0)


def _enclosing_start(ts: float, spans: list[dict[str, Any]]) -> float:
    for span in reversed(spans):
        start = float(span["ts"])
        if start <= ts <= start + float(span.get("dur", 0)):
            return start
        if start < ts:
            break
    return ts


def find_artifacts(output_dir: Path, *, prefix: str, profile_id: str | None, since: float, producer: str) -> list[Artifact]:
    """The files one session wrote into ``output_dir`` (``steps`` left ``None`` for the caller).

    With ``profile_id`` (SGLang keeps the client's id) traces are matched by name; otherwise, and
    always for MEM snapshots (named by the server's clock), by prefix and modification time
    ``>= since``.
    """
    if not output_dir.is_dir():
        return []
    found: list[Artifact] = []
    for path in sorted(output_dir.iterdir()):
        name = path.name
        if profile_id is not None and name.startswith(f"{prefix}-{profile_id}-") and name.endswith(".trace.json.gz"):
            kind = "trace"
        elif profile_id is not None and name == f"merged-{profile_id}.trace.json.gz":
            kind = "merged-trace"
        elif not name.startswith(f"{prefix}-") or _mtime(path) < since:
            continue
        elif name.endswith(".pickle") and "-memory" in name:
            kind = "memory-snapshot"
        elif profile_id is None and name.endswith(".trace.json.gz"):
            kind = "trace"
        else:
            continue
        match = _TP.search(name)
        found.append(
            Artifact(
                path=path.absolute(),
                steps=None,
                bytes=path.stat().st_size,
                rank=int(match.group(1)) if match else 0,
                kind=kind,
                producer=producer,
            )
        )
    return found


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
