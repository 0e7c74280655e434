"""Reading what the memory profiler wrote: snapshots (only profwin's own, unless trusted) and timelines.

A snapshot is a pickle, and unpickling runs code chosen by the file's author. :func:`load_snapshot`
therefore refuses a snapshot unless its signature (see :mod:`profwin_memory.provenance`) shows
profwin on this machine wrote it, or the caller passes ``trust=True``. Even then it unpickles with
an unpickler that resolves no Python objects at all (a snapshot is plain dicts, lists, strings
and numbers); only a trusted file that needs objects falls back to the standard unpickler.
"""

from __future__ import annotations

import io
import pickle
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from profwin.plugin import checked
from profwin.plugin.files import read_input
from profwin_memory.cuda_snapshot import STEP_METADATA
from profwin_memory.naming import stat_input
from profwin_memory.provenance import UntrustedSnapshotError, verify
from profwin_memory.timeline import MAX_TIMELINE_BYTES, load_timeline

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "MAX_TIMELINE_BYTES",
    "load_snapshot",
    "load_timeline",
    "summarize",
    "summarize_snapshot",
    "summarize_timeline",
]

MAX_SNAPSHOT_BYTES = 4 << 30
"""Largest CUDA memory snapshot read (4 GiB: a long history on a large GPU is hundreds of MB)."""


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise UntrustedSnapshotError(
            f"the pickle references the Python object {module}.{name}; profwin's reader only loads plain data"
        )


@checked
def load_snapshot(path: str | Path, *, trust: bool = False) -> dict[str, Any]:
    """The snapshot dict in ``path`` (as ``torch.cuda.memory._snapshot()`` returned it).

    Raises :class:`UntrustedSnapshotError` with the reason when profwin cannot show it wrote the
    file, unless ``trust`` is true. A missing file is ``FileNotFoundError`` (so is one for the
    readers built on this one: :func:`summarize_snapshot`, :func:`summarize`).
    """
    path = Path(path)
    stat_input(path, "memory snapshot")  # a missing file is "no such file", not "no signature"
    if not trust:
        verify(path)
    data = read_input(path, limit=MAX_SNAPSHOT_BYTES, what="memory snapshot")
    try:
        try:
            snapshot = _PlainDataUnpickler(io.BytesIO(data)).load()
        except UntrustedSnapshotError:
            if not trust:
                raise
            snapshot = pickle.loads(data)  # the caller vouched for this file
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError) as exc:
        raise ValueError(f"{path} is not a readable pickle ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})") from None
    if not isinstance(snapshot, dict) or "segments" not in snapshot:
        raise ValueError(f"{path} is not a CUDA memory snapshot (no 'segments' in it)")
    return snapshot


def _site(frames: list[Mapping[str, Any]]) -> str:
    """The first frame outside torch itself: where the user's code asked for the memory."""
    for frame in frames:
        filename = str(frame.get("filename", ""))
        if "/torch/" not in filename and not filename.startswith("<"):
            return f"{filename}:{frame.get('line')} {frame.get('name')}"
    if frames:
        return f"{frames[0].get('filename')}:{frames[0].get('line')} {frames[0].get('name')}"
    return "(no stack recorded)"


def _step(entry: Mapping[str, Any]) -> int | None:
    tag = str(entry.get("user_metadata", ""))
    number = tag[len(STEP_METADATA) :] if tag.startswith(STEP_METADATA) else ""
    return int(number) if number.isdigit() else None


def _summarize_trace(device: int, trace: list[Mapping[str, Any]], top: int) -> dict[str, Any]:
    actions: Counter[str] = Counter()
    per_step: Counter[int] = Counter()
    site_bytes: Counter[str] = Counter()
    site_count: Counter[str] = Counter()
    growth = peak = alloc_bytes = freed_bytes = 0
    for entry in trace:
        action = str(entry.get("action"))
        size = int(entry.get("size", 0))
        actions[action] += 1
        if action == "alloc":
            growth += size
            alloc_bytes += size
            site = _site(list(entry.get("frames", [])))
            site_bytes[site] += size
            site_count[site] += 1
            step = _step(entry)
            if step is not None:
                per_step[step] += size
        elif action == "free_completed":
            growth -= size
            freed_bytes += size
        peak = max(peak, growth)
    return {
        "device": device,
        "events": len(trace),
        "actions": dict(sorted(actions.items())),
        "alloc_bytes": alloc_bytes,
        "freed_bytes": freed_bytes,
        "peak_growth_bytes": peak,
        "end_growth_bytes": growth,
        "alloc_bytes_per_step": {str(k): v for k, v in sorted(per_step.items())},
        "top_sites": [
            {"site": site, "alloc_bytes": nbytes, "alloc_count": site_count[site]} for site, nbytes in site_bytes.most_common(top)
        ],
    }


@checked
def summarize_snapshot(path: str | Path, *, trust: bool = False, top: int = 10) -> dict[str, Any]:
    """Peak growth, bytes per step, top allocation sites and allocator state of a snapshot.

    "Growth" counts allocations minus completed frees in the recorded history, so it starts at 0
    when recording started (the window's start, for profwin's snapshots).
    """
    snapshot = load_snapshot(path, trust=trust)
    try:
        return _snapshot_summary(path, snapshot, top)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a trusted file of another shape
        raise ValueError(f"{path} is not a CUDA memory snapshot as torch writes it ({type(exc).__name__}: {exc})") from None


def _snapshot_summary(path: str | Path, snapshot: dict[str, Any], top: int) -> dict[str, Any]:
    segments = snapshot.get("segments", [])
    return {
        "kind": "memory-snapshot",
        "path": str(path),
        "segments": len(segments),
        "reserved_bytes": sum(int(s.get("total_size", 0)) for s in segments),
        "allocated_bytes": sum(int(s.get("allocated_size", 0)) for s in segments),
        "devices": [
            _summarize_trace(device, list(trace), top) for device, trace in enumerate(snapshot.get("device_traces", [])) if trace
        ],
    }


@checked
def summarize_timeline(path: str | Path) -> dict[str, Any]:
    """Totals, top ops and the step with the highest live bytes of a CPU timeline, and how many
    events it holds; read streaming and checked whole (:func:`load_timeline` with ``events=False``)."""
    data = load_timeline(path, events=False)
    return {
        "kind": "memory-timeline",
        "path": str(path),
        "steps": data["steps"],
        "events": data.get("events", 0),
        "totals": data["totals"],
        "top_ops": data["top_ops"],
    }


@checked
def summarize(path: str | Path, *, trust: bool = False) -> dict[str, Any]:
    """:func:`summarize_timeline` for ``*.json``/``*.json.gz``, else :func:`summarize_snapshot`."""
    name = Path(path).name
    if name.endswith((".json", ".json.gz")):
        return summarize_timeline(path)
    return summarize_snapshot(path, trust=trust)
