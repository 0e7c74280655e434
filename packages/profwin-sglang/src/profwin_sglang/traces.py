"""The files an SGLang profiling session writes: finding them, counting their batches, trimming.

SGLang 0.5.23 names them (``srt/managers/scheduler_components/profiler_manager.py``)::

    {prefix}-{profile_id}-TP-{tp}[-DP-{dp}][-PP-{pp}][-EP-{ep}][-EXTEND|-DECODE].trace.json.gz
    merged-{profile_id}.trace.json.gz                      (merge_profiles, written by rank 0)
    {prefix}-{time.time()}-TP-{tp}-memory[-EXTEND|-DECODE].pickle        (MEM: no profile_id)

Each scheduler batch's forward is one ``step[MODE bs=... ]`` span (``profile_range`` in
``model_runner``): that is what a "step" is. Reading and trimming are core's
(:mod:`profwin.traces`, which knows SGLang's markers).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from profwin.plugin_api import Artifact
from profwin.traces import TORCH_MARKER, TraceError, summarize, trim
from profwin.window import Window
from profwin_sglang._plugin import PLUGIN

__all__ = ["count_steps", "find_artifacts", "step_names", "trim_in_place"]

_TP = re.compile(r"-TP-(\d+)")
# Named, not looked up: the engine process may have profwin on PYTHONPATH without the entry
# points that fill the registry. torch's marker first, as the registry would rank it.
_MARKERS = (TORCH_MARKER, PLUGIN.step_marker) if PLUGIN.step_marker else None


def step_names(path: str | os.PathLike[str]) -> list[str]:
    """The ``step[...]`` span names of a chrome trace, in time order (one per scheduler batch)."""
    try:
        return [step.label for step in summarize(Path(path), top=0, markers=_MARKERS).steps]
    except TraceError:  # no step markers at all: no batch ran while recording
        return []


def count_steps(path: str | os.PathLike[str]) -> int:
    """How many scheduler batches a chrome trace holds."""
    return len(step_names(path))


def trim_in_place(path: str | os.PathLike[str], keep: Window) -> int:
    """Cut a trace down to its batches ``keep`` (numbered from 0 in trace order) with
    :func:`profwin.traces.trim`, replacing the file; returns the number of batches kept (0: the
    trace holds none of them and is left as it was)."""
    path = Path(path)
    partial = path.with_name(f".profwin-trim-{path.name}")
    try:
        result = trim(path, keep, partial, markers=_MARKERS)
    except TraceError:
        return 0
    os.replace(partial, path)
    return result.step_count


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
