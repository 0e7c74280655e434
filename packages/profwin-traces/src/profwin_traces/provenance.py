"""A trace's provenance, as profwin's tools read it: the sidecar next to the trace and the
``"profwin"`` key inside it (what they hold: :mod:`profwin.provenance`, the writing half in core).

Each sidecar is read once in a process while its file is unchanged (:func:`file_identity`), however
many tools ask (a command asks for a trace's provenance up to three times).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from profwin.plugin import ConfigError
from profwin.plugin.engines import installed_version
from profwin.plugin.files import FORMAT_KEY, PROVENANCE_FORMAT, PROVENANCE_KEY, parse_json, read_input, sidecar_path

__all__ = ["file_identity", "first_step_of", "provenance", "read_sidecar", "sidecar_info", "traces_version"]

MAX_SIDECAR_BYTES = 1 << 16
"""A sidecar larger than this is not profwin's: it is damaged (:func:`sidecar_info` says so)."""
_READ: OrderedDict[tuple[str, tuple[int, ...]], tuple[dict[str, Any], str]] = OrderedDict()
"""Sidecars read in this process, by path and :func:`file_identity`: each is read
once however many tools ask (a command asks for a trace's provenance up to three times)."""
_READ_KEPT = 4096


def traces_version() -> str:
    """profwin-traces' version: the ``version`` a trace it writes (a merge) records."""
    return installed_version("profwin_traces", ("profwin-traces",)) or "0+unknown"


def file_identity(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """What tells one state of the file at ``path`` from another (device, inode, type, size,
    modification and change times), or ``None`` when it cannot be looked at. Every write changes
    it (the change time moves with each write, a rename gives a new inode), so a value computed
    from a file can be kept while this stays the same: each file is read once per command."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return (info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def read_sidecar(trace: str | Path) -> dict[str, Any]:
    """The sidecar of ``trace``, or ``{}`` when there is none or it cannot be read
    (:func:`sidecar_info` says why)."""
    return sidecar_info(trace)[0]


def sidecar_info(trace: str | Path) -> tuple[dict[str, Any], str]:
    """The sidecar of ``trace`` and ``""``; ``({}, "")`` when there is none; ``({}, why)`` when
    one is there but cannot be read: not a regular file (profwin writes its sidecars as regular
    files, so a FIFO is refused at once, never waited on), larger than :data:`MAX_SIDECAR_BYTES`,
    not a JSON object within the spec bounds, or a format version this profwin does not read.
    Each sidecar is read once in a process while it is unchanged (:func:`file_identity`)."""
    path = sidecar_path(trace)
    identity = file_identity(path)
    if identity is None:
        return (
            ({}, "") if not os.path.lexists(path) else ({}, f"its provenance sidecar {path.name} cannot be read (a broken link?)")
        )
    key = (os.path.abspath(path), identity)
    if key in _READ:
        _READ.move_to_end(key)
        data, why = _READ[key]
        return dict(data), why
    found = _read_one(path)
    _READ[key] = found
    while len(_READ) > _READ_KEPT:
        _READ.popitem(last=False)
    return dict(found[0]), found[1]


def _read_one(path: Path) -> tuple[dict[str, Any], str]:
    try:
        # The bounded reader, regular files only: a FIFO or device named like a sidecar never blocks or floods.
        data = parse_json(read_input(path, limit=MAX_SIDECAR_BYTES, what="provenance sidecar", pipes=False), source=path.name)
        if not isinstance(data, dict):
            raise ConfigError(f"{path.name}: must be a JSON object (got a {type(data).__name__})")
        PROVENANCE_FORMAT.check(data)
    except ConfigError as exc:
        return {}, f"its provenance sidecar is damaged or not profwin's: {exc}"
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        return {}, f"its provenance sidecar {path.name} cannot be read: {exc.strerror or exc}"
    data.pop(FORMAT_KEY, None)
    return data, ""


def provenance(trace: str | Path, header: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What is known of ``trace``: its sidecar, overridden by the ``"profwin"`` key of its
    ``header`` (the trace's top-level keys, when already read)."""
    found = read_sidecar(trace)
    inside = header.get(PROVENANCE_KEY) if header is not None else None
    if isinstance(inside, dict):
        found.update({k: v for k, v in inside.items() if k != FORMAT_KEY})
    return found


def first_step_of(info: Mapping[str, Any]) -> int | None:
    """The number of the trace's first step: ``first_step``, else the start of ``steps``."""
    first = info.get("first_step")
    if type(first) is int and first >= 0:
        return first
    steps = info.get("steps")
    if isinstance(steps, str):
        start = steps.split(":", 1)[0]
        if start.isascii() and start.isdigit() and len(start) <= 18:
            return int(start)
    return None
