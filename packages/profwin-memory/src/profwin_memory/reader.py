"""Reading what the memory profiler wrote: snapshots (only profwin's own, unless trusted) and timelines.

A snapshot is a pickle, and unpickling runs code chosen by the file's author. :func:`load_snapshot`
therefore refuses a snapshot unless its signature (see :mod:`profwin_memory.provenance`) shows
profwin on this machine wrote it, or the caller passes ``trust=True``. Even then it unpickles with
an unpickler that resolves no Python objects at all (a snapshot is plain dicts, lists, strings
and numbers); only a trusted file that needs objects falls back to the standard unpickler.
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
import zlib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from profwin.plugin import ConfigError, checked, open_input, read_input
from profwin_memory.cpu_timeline import TIMELINE_FORMAT
from profwin_memory.cuda_snapshot import STEP_METADATA
from profwin_memory.provenance import UntrustedSnapshotError, verify

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "MAX_TIMELINE_BYTES",
    "load_snapshot",
    "load_timeline",
    "summarize",
    "summarize_snapshot",
    "summarize_timeline",
]

MAX_TIMELINE_BYTES = 256 << 20
"""Largest CPU memory timeline read, decompressed (256 MiB; profwin writes a few MB per window)."""
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
    try:
        path.stat()  # a missing file is "no such file", not "no signature"
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read memory snapshot {str(path)!r}: {exc.strerror or exc}", path="path") from None
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
def load_timeline(path: str | Path, *, events: bool = True) -> dict[str, Any]:
    """A CPU memory timeline written by the memory profiler (plain JSON, safe to read).

    Streamed: the top-level keys are decoded one at a time from the (decompressed) file. With
    ``events=False`` the per-event arrays (``events``, ``ops``: most of a large file) are walked
    one element at a time and replaced by their length, so memory stays a few MiB whatever the
    file's size (what :func:`summarize_timeline` reads). A missing file is ``FileNotFoundError``
    (for :func:`summarize_timeline` too).
    """
    path = Path(path)
    with open_input(path, what="memory timeline") as f:  # a FIFO or a device fails at once
        gz = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        binary: Any = gzip.GzipFile(fileobj=f) if gz else f
        try:
            data = _Stream(io.TextIOWrapper(binary, encoding="utf-8"), path, gz, () if events else _SKIPPED).document()
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise ValueError(f"{path} is a damaged gzip file ({exc})") from None
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} is not UTF-8 text ({exc.reason})") from None
    if not isinstance(data, dict) or data.get("format") != TIMELINE_FORMAT:
        raise ValueError(f"{path} is not a profwin memory timeline (format {TIMELINE_FORMAT!r})")
    return data


_SKIPPED = ("events", "ops")  # per-event arrays: counted, not kept
_CHUNK = 1 << 20


class _Stream:
    """Decodes one JSON object's top-level values from text read in chunks (see load_timeline)."""

    def __init__(self, text: Any, path: Path, gz: bool, skipped: tuple[str, ...]) -> None:
        self._text = text
        self._skipped = skipped
        self._path = path
        self._gz = gz
        self._buf = ""
        self._pos = 0
        self._read = 0
        self._eof = False
        self._decoder = json.JSONDecoder(parse_constant=_no_constant)

    def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = self._text.read(_CHUNK)
        self._read += len(chunk)
        if self._read > MAX_TIMELINE_BYTES:
            raise ValueError(
                f"{self._path} holds more than {MAX_TIMELINE_BYTES:,} bytes{' decompressed' if self._gz else ''}, "
                "the limit for a memory timeline"
            )
        self._buf = self._buf[self._pos :] + chunk
        self._pos = 0
        self._eof = not chunk
        return bool(chunk)

    def _char(self) -> str:
        """The next non-whitespace character (not consumed); "" at the end."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in " \t\r\n":
                self._pos += 1
            if self._pos < len(self._buf) or not self._fill():
                return self._buf[self._pos : self._pos + 1]

    def _expect(self, chars: str) -> str:
        char = self._char()
        if not char or char not in chars:
            raise ValueError(f"{self._path} is not a profwin memory timeline (invalid JSON: expected one of {chars!r})")
        self._pos += 1
        return char

    def _value(self) -> Any:
        self._char()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                if self._fill() or (not self._eof and self._fill()):
                    continue
                raise ValueError(f"{self._path} is not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise ValueError(f"{self._path} is nested too deeply to be a profwin memory timeline") from None
            if end == len(self._buf) and not self._eof and self._fill():
                continue  # a number may go on in the next chunk
            self._pos = end
            return value

    def _count_array(self) -> int:
        self._expect("[")
        if self._char() == "]":
            self._pos += 1
            return 0
        count = 0
        while True:
            self._value()
            count += 1
            if self._expect(",]") == "]":
                return count

    def document(self) -> Any:
        if self._char() != "{":
            return self._value()
        self._pos += 1
        data: dict[str, Any] = {}
        if self._char() == "}":
            return data
        while True:
            key = self._value()
            if not isinstance(key, str):
                raise ValueError(f"{self._path} is not valid JSON (a key that is not a string)")
            self._expect(":")
            data[key] = self._count_array() if key in self._skipped and self._char() == "[" else self._value()
            if self._expect(",}") == "}":
                break
        if self._char():
            raise ValueError(f"{self._path} is not valid JSON (text after the document)")
        return data


def _no_constant(name: str) -> Any:
    # profwin writes no NaN or Infinity (standard JSON has neither): a file holding one is not its timeline.
    raise ValueError(f"holds {name}, which is not a JSON number; profwin's memory timelines hold none")


@checked
def summarize_timeline(path: str | Path) -> dict[str, Any]:
    """Totals, top ops and the step with the highest live bytes of a CPU timeline."""
    data = load_timeline(path, events=False)
    missing = [key for key in ("steps", "totals", "top_ops") if key not in data]
    if missing or not isinstance(data["totals"], dict) or not isinstance(data["top_ops"], list):
        raise ValueError(f"{path} is not a complete profwin memory timeline (missing or mistyped: steps, totals, top_ops)")
    return {
        "kind": "memory-timeline",
        "path": str(path),
        "steps": data["steps"],
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
