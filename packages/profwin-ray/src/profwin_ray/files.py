"""What runs on each node, and the caller's side of a copy: plain Python, no Ray.

The Ray tasks in :mod:`profwin_ray.cluster` call the node functions here (:func:`list_files`,
:func:`read_chunk`, :func:`resolve_traces`, :func:`summarize_one`); the caller writes what they
send with :class:`Receiver`. Keeping Ray out of this module lets its rules be read, and tested,
without a cluster.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from attrs import frozen

from profwin.plugin import Summary, TraceError, TraceFacts, Window, atomic_path, summarize, trace_facts, trace_files

__all__ = [
    "MANIFEST",
    "FileChanged",
    "NodeFile",
    "Receiver",
    "list_files",
    "on_node",
    "pattern_base",
    "read_chunk",
    "resolve_traces",
    "sha256_of",
    "summarize_one",
]

MANIFEST = ".profwin-collect.json"
"""Kept in the destination folder: each collected file's checksum, size and local mtime, so a
second run skips what already arrived without reading it again."""
_GLOB = frozenset("*?[")


class FileChanged(Exception):
    """The file on the node vanished or changed while it was being copied (a node-side error
    that travels back to the caller through Ray: one string argument, so it pickles)."""


@frozen
class NodeFile:
    """A file on a node: its path there, its name under ``<dest>/<node>/``, and what identifies
    its content (a copy is valid only while these hold)."""

    path: str
    name: str
    bytes: int
    mtime_ns: int
    inode: int
    sha256: str


def pattern_base(pattern: str) -> Path:
    """The folder the files of ``pattern`` are named relative to: its leading components without
    glob characters (``/data/run/*/x.json`` -> ``/data/run``), or the pattern itself when it is a
    folder, or the file's own folder."""
    parts = Path(pattern).parts
    fixed: list[str] = []
    for part in parts:
        if _GLOB & set(part):
            break
        fixed.append(part)
    base = Path(*fixed) if fixed else Path(".")
    if len(fixed) == len(parts):  # no glob: a folder, or a file
        return base if base.is_dir() else base.parent
    return base


def sha256_of(path: Path | str, chunk_bytes: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk_bytes):
            digest.update(block)
    return digest.hexdigest()


def on_node(path: str) -> str:
    """``path`` as this node reads it: ``~`` and ``$VAR`` expanded with the node's environment
    (nodes differ: ``$TMPDIR``, a per-node variable set where the node was started)."""
    return os.path.expanduser(os.path.expandvars(path))


def list_files(pattern: str) -> list[NodeFile]:
    """The regular files ``pattern`` names on this node (a glob, ``**`` for any depth; a folder
    means the files directly inside it; ``~`` and ``$VAR`` expanded here), hidden files and
    profwin's ``.partial`` files left out, with their checksums. Runs on the node."""
    pattern = on_node(pattern)
    base = pattern_base(pattern)
    path = Path(pattern)
    matches = (
        sorted(str(p) for p in path.iterdir())
        if not (_GLOB & set(pattern)) and path.is_dir()
        else glob.glob(pattern, recursive=True)
    )
    found: list[NodeFile] = []
    for match in sorted(matches):
        try:
            info = os.stat(match)
        except OSError:
            continue  # gone since the glob: not there to collect
        name = os.path.relpath(match, base)
        hidden = any(part.startswith(".") for part in Path(name).parts)
        if not stat.S_ISREG(info.st_mode) or hidden or name.startswith(".."):
            continue
        try:
            digest = sha256_of(match)
        except OSError:
            continue
        found.append(NodeFile(match, name, info.st_size, info.st_mtime_ns, info.st_ino, digest))
    return found


def read_chunk(file: NodeFile, offset: int, size: int) -> bytes:
    """``size`` bytes of ``file`` from ``offset``, if it is still the file that was listed: one
    that was removed, replaced or changed since is :class:`FileChanged`. Runs on the node."""
    try:
        info = os.stat(file.path)
    except FileNotFoundError:
        raise FileChanged(f"{file.path} was removed during the copy") from None
    if (info.st_ino, info.st_size, info.st_mtime_ns) != (file.inode, file.bytes, file.mtime_ns):
        raise FileChanged(f"{file.path} changed during the copy (size {file.bytes} -> {info.st_size})")
    with open(file.path, "rb") as f:
        f.seek(offset)
        return f.read(size)


def resolve_traces(paths: Sequence[str]) -> list[tuple[int, int, bool, TraceFacts]]:
    """The trace files ``paths`` name on this node, as ``profwin summarize`` reads them (files as
    given, folders expanded; ``~`` and ``$VAR`` expanded here): ``(index of the path given, size,
    found in a folder, what choosing a session needs of it)``, the facts' path being the file's
    on this node. Paths this node does not have are left out. Runs on the node."""
    found = []
    for i, given in enumerate(on_node(p) for p in paths):
        if not os.path.exists(given):
            continue
        try:
            files = trace_files([given])
        except TraceError:
            continue  # a folder without traces here; another node may have them
        for file in files:
            try:
                size = os.stat(file).st_size
            except OSError:
                continue
            found.append((i, size, os.path.isdir(given), trace_facts(file)))
    return found


def summarize_one(path: str, window: Window | str | None, top: int, first_step: int | None) -> tuple[str, Any, float]:
    """``profwin summarize`` of one trace, where it lies: ``("ok", Summary, cpu_s)``, ``("no steps",
    reason, cpu_s)`` (a trace without step markers) or ``("error", reason, cpu_s)``; ``cpu_s``: the
    CPU seconds the summary took on the node (this thread's). Errors travel as text:
    :class:`TraceError` does not pickle. Runs on the node."""
    began = time.thread_time()
    try:
        summary: Summary = summarize(path, window=window, top=top, first_step=first_step)
    except TraceError as exc:
        status = "no steps" if exc.reason.startswith("no step markers") else "error"
        return status, exc.reason, time.thread_time() - began
    return "ok", summary, time.thread_time() - began


# -- the caller's side ---------------------------------------------------------------------


class Receiver:
    """Writes one file as its chunks arrive, under a hidden name renamed into place only once all
    of it arrived with the listed checksum (profwin's ``atomic_path``): a failure, Ctrl-C or a
    checksum mismatch leaves nothing under the final name."""

    def __init__(self, final: Path, expected: NodeFile) -> None:
        self.final = final
        self.expected = expected
        self.received = 0
        self._digest = hashlib.sha256()

    def write_all(self, chunks: Iterable[bytes]) -> None:
        self.final.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.final) as tmp:
            with open(tmp, "wb") as out:
                self._write(chunks, out)
            # The node's file time, as `cp -p` keeps it: "each rank's newest session" is then the
            # same choice on the collected files as on the nodes.
            os.utime(tmp, ns=(self.expected.mtime_ns, self.expected.mtime_ns))

    def _write(self, chunks: Iterable[bytes], out: IO[bytes]) -> None:
        for chunk in chunks:
            out.write(chunk)
            self._digest.update(chunk)
            self.received += len(chunk)
        if self.received != self.expected.bytes or self._digest.hexdigest() != self.expected.sha256:
            raise FileChanged(
                f"{self.expected.path}: {self.received} bytes arrived with sha256 {self._digest.hexdigest()[:12]}…, "
                f"the node listed {self.expected.bytes} bytes with {self.expected.sha256[:12]}… (it changed during the copy)"
            )


def load_manifest(dest: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads((dest / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_manifest(dest: Path, entries: dict[str, dict[str, Any]]) -> None:
    with atomic_path(dest / MANIFEST) as tmp:
        tmp.write_text(json.dumps(entries, indent=1, sort_keys=True))


def already_collected(final: Path, key: str, file: NodeFile, manifest: dict[str, dict[str, Any]]) -> bool:
    """Whether ``final`` already holds ``file`` (same checksum): trusted from the manifest while
    the local file's size and mtime are what it recorded, else read again."""
    try:
        info = final.stat()
    except OSError:
        return False
    if info.st_size != file.bytes:
        return False
    entry = manifest.get(key, {})
    if entry.get("bytes") == info.st_size and entry.get("mtime_ns") == info.st_mtime_ns:
        return bool(entry.get("sha256") == file.sha256)
    return sha256_of(final) == file.sha256
