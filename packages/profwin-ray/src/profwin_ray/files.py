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
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from attrs import frozen

from profwin.plugin import ConfigError, Window
from profwin.plugin.files import FORMAT_KEY, Format, atomic_path, check_output_path, parse_json, read_input, write_atomic
from profwin_traces import Summary, TraceError, TraceFacts, summarize, trace_facts, trace_files

__all__ = [
    "MANIFEST",
    "MANIFEST_FORMAT",
    "MAX_MANIFEST_BYTES",
    "FileChanged",
    "NodeFile",
    "Receiver",
    "check_manifest",
    "destination",
    "list_files",
    "load_manifest",
    "on_node",
    "pattern_base",
    "plain_file",
    "read_chunk",
    "reported",
    "resolve_traces",
    "save_manifest",
    "sha256_of",
    "summarize_one",
]

MANIFEST = ".profwin-collect.json"
"""Kept in the destination folder: each collected file's checksum, size and local mtime, so a
second run skips what already arrived without reading it again."""
MAX_MANIFEST_BYTES = 64 << 20
"""Largest manifest read (64 MiB, some 400,000 files); a larger or damaged one is ignored (each
file already there is then checked by its checksum)."""
MANIFEST_FORMAT = Format("profwin.collect-manifest", version=2, package="profwin-ray")
"""The manifest: ``"<node>/<file>"`` -> its ``sha256``, ``bytes`` and local ``mtime_ns`` (version 1:
the same without ``"format"``). One of a version this profwin does not read is ignored, as a
damaged one is."""
_GLOB = frozenset("*?[")
# A file on a node is read only through its own name: never through a symbolic link (one swapped
# in after the listing included), never blocking on a FIFO swapped in.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class FileChanged(Exception):
    """The file on the node vanished or changed while it was being copied."""


def reported(fn: Callable[..., Any]) -> Callable[..., tuple[bool, Any]]:
    """``fn`` as a node task: ``(True, what it returned)``, or ``(False, why)`` when it raised:
    one line naming what failed, never a traceback (Ray would carry a task's traceback to the
    caller, and print it on stderr for a task whose answer no one asked for)."""

    def task(*args: Any) -> tuple[bool, Any]:
        try:
            return True, fn(*args)
        except FileChanged as exc:
            return False, str(exc)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            return False, f"{where}{exc.strerror or exc}"
        except Exception as exc:  # MemoryError included: the node's own failure, said in one line
            text = " ".join(str(exc).split())
            return False, f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__

    task.__name__ = fn.__name__  # what Ray shows; the qualified name stays this wrapper's
    return task


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


def plain_file(base: Path, name: str) -> bool:
    """Whether ``base/name`` is a regular file reached without a symbolic link below ``base``:
    ``name`` is relative, goes nowhere above ``base`` and no part of it is a link."""
    parts = Path(name).parts
    if not parts or os.path.isabs(name) or any(part in (".", "..") for part in parts):
        return False
    here = base
    for part in parts:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except OSError:
            return False
        if stat.S_ISLNK(mode):
            return False
    return stat.S_ISREG(mode)


def _open_plain(path: str) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file ``path`` (not followed if it is a link) and its status."""
    fd = os.open(path, _READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def on_node(path: str) -> str:
    """``path`` as this node reads it: ``~`` and ``$VAR`` expanded with the node's environment
    (nodes differ: ``$TMPDIR``, a per-node variable set where the node was started)."""
    return os.path.expanduser(os.path.expandvars(path))


def list_files(pattern: str) -> list[NodeFile]:
    """The regular files ``pattern`` names on this node (a glob, ``**`` for any depth; a folder
    means the files directly inside it; ``~`` and ``$VAR`` expanded here), with their checksums.
    Only files under the pattern's folder (:func:`pattern_base`) reached without a symbolic link
    (:func:`plain_file`: a link to ``/etc/shadow`` there is not followed, nor is a linked folder
    under ``**``); hidden files and profwin's ``.partial`` files are left out. Runs on the node."""
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
        name = os.path.relpath(match, base)
        if any(part.startswith(".") for part in Path(name).parts) or not plain_file(base, name):
            continue
        try:
            fd, info = _open_plain(match)
        except OSError:
            continue  # gone, or replaced by a link, since the walk: not there to collect
        with os.fdopen(fd, "rb") as f:
            digest = hashlib.sha256()
            while block := f.read(1 << 22):
                digest.update(block)
        found.append(NodeFile(match, name, info.st_size, info.st_mtime_ns, info.st_ino, digest.hexdigest()))
    return found


def read_chunk(file: NodeFile, offset: int, size: int) -> bytes:
    """``size`` bytes of ``file`` from ``offset`` (fewer at its end), if it is still the file
    that was listed: one that was removed, replaced (by a link too) or changed since, or that ends
    before the chunk does, is :class:`FileChanged`. Runs on the node."""
    try:
        fd, info = _open_plain(file.path)
    except FileNotFoundError:
        raise FileChanged(f"{file.path} was removed during the copy") from None
    except OSError:
        raise FileChanged(f"{file.path} was replaced during the copy (it is no longer a regular file)") from None
    with os.fdopen(fd, "rb") as f:
        if (info.st_ino, info.st_size, info.st_mtime_ns) != (file.inode, file.bytes, file.mtime_ns):
            raise FileChanged(f"{file.path} changed during the copy (size {file.bytes} -> {info.st_size})")
        want = max(0, min(size, file.bytes - offset))  # never more than the listed file holds
        f.seek(offset)
        data = f.read(want)
    if len(data) != want:
        raise FileChanged(f"{file.path} changed during the copy (it ended at {offset + len(data)} of {file.bytes} bytes)")
    return data


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


def summarize_one(path: str | list[str], window: Window | str | None, top: int, first_step: int | None) -> tuple[str, Any, float]:
    """``profwin summarize`` of one trace (or of one window's part traces, in order), where it lies: ``("ok", Summary, cpu_s)``, ``("no steps",
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
    """The manifest in ``dest`` as far as it can be trusted: read with core's bounded reader as a
    regular file of at most :data:`MAX_MANIFEST_BYTES` (``/dev/zero`` or a FIFO there is not
    read), and only its well-formed entries. A missing or damaged one is empty: the files already
    in ``dest`` are then checked by their checksum."""
    try:
        data = parse_json(
            read_input(dest / MANIFEST, limit=MAX_MANIFEST_BYTES, what="collect manifest", pipes=False), source=MANIFEST
        )
        if not isinstance(data, dict):
            return {}
        MANIFEST_FORMAT.check(data)
    except (OSError, ValueError):  # ConfigError is a ValueError
        return {}
    data.pop(FORMAT_KEY, None)
    return {
        key: entry
        for key, entry in data.items()
        if isinstance(entry, dict)
        and isinstance(entry.get("sha256"), str)
        and type(entry.get("bytes")) is int
        and type(entry.get("mtime_ns")) is int
    }


def check_manifest(dest: Path) -> None:
    """Before any copy: the manifest can be written in ``dest`` (a new file or a regular one,
    :func:`profwin.plugin.files.check_output_path`), so that a FIFO, a link or a folder there is one
    clear error at once rather than after every file was copied."""
    try:
        check_output_path(dest / MANIFEST)
    except ConfigError as exc:
        raise ConfigError(str(exc), path="to") from None


def save_manifest(dest: Path, entries: dict[str, dict[str, Any]]) -> None:
    write_atomic(dest / MANIFEST, json.dumps(MANIFEST_FORMAT.stamp(entries), indent=1, sort_keys=True).encode())


def destination(root: Path, name: str) -> Path:
    """``root/name``, where a collected file is written, if nothing planted there can turn the write
    elsewhere: ``name`` is relative and goes nowhere above ``root``, no part of it below ``root`` is
    a symbolic link or anything but a folder, and the file itself is new or a regular file. Else a
    :class:`ConfigError` saying what is there: the caller refuses that one file, reports it and
    goes on with the others."""
    parts = name.split("/")
    if os.path.isabs(name) or any(part in ("", ".", "..") for part in parts):
        raise ConfigError(f"refused: {name!r} is not a plain name under {str(root)!r}")
    here = root
    for i, part in enumerate(parts):
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            break  # from here on, all made new
        except OSError as exc:
            raise ConfigError(f"refused: cannot look at {str(here)!r}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(mode):
            raise ConfigError(f"refused: {str(here)!r} is a symbolic link; profwin never writes through one")
        last = i == len(parts) - 1
        if last and not stat.S_ISREG(mode):
            check_output_path(here)  # says what it is (a FIFO, a device, a folder)
        if not last and not stat.S_ISDIR(mode):
            raise ConfigError(f"refused: {str(here)!r} is not a folder")
    return root / name


def already_collected(final: Path, key: str, file: NodeFile, manifest: dict[str, dict[str, Any]]) -> bool:
    """Whether ``final`` already holds ``file`` (same checksum): trusted from the manifest while
    the local file's size and mtime are what it recorded, else read again."""
    try:
        info = final.lstat()
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or info.st_size != file.bytes:
        return False
    entry = manifest.get(key, {})
    if entry.get("bytes") == info.st_size and entry.get("mtime_ns") == info.st_mtime_ns:
        return bool(entry.get("sha256") == file.sha256)
    return sha256_of(final) == file.sha256
