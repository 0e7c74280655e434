"""Provenance: what profwin knows about a trace it wrote or collected travels with the file.

Inside the trace, as the Chrome trace format allows, a top-level key ``"profwin"`` (an object:
extra top-level keys are metadata to every viewer). Where profwin cannot write inside the file
(a trace an engine wrote, collected by :func:`profwin.remote_session`), the same object is in a
sidecar next to it, ``<trace>.profwin.json``, written atomically. The keys, all optional:

``window``      the window asked for (``"20:80"``)
``steps``       the session steps the file holds (``"20:80"``)
``first_step``  the number of its first step (what order-numbered engine markers start from)
``engine``      ``torch``, ``vllm``, ``sglang``, ...; ``engine_version``
``producer``    what wrote the file; ``rank``; ``session`` (one id per profiling session)
``version``     profwin's version; ``source`` (for a trimmed trace: the trace it was cut from)
``format``      ``profwin.provenance/1`` (:data:`FORMAT`; none before formats had versions: 1)

Every trace tool reads it (:func:`provenance`, and :func:`profwin.traces.ranks.peek` for a
trace's top-level keys): steps keep their session numbers without ``--first-step``, a folder
groups its traces by session, and summaries say where a trace came from. This module sits with
the values (it needs only the atomic writer and the bounded reader), so the torch driver and
remote sessions write provenance without importing the trace tools.
"""

from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from profwin.atomic import write_atomic
from profwin.errors import ConfigError
from profwin.formats import FORMAT_KEY, Format
from profwin.inputs import file_identity, parse_json, read_input

__all__ = [
    "FORMAT",
    "KEY",
    "SIDECAR_SUFFIX",
    "first_step_of",
    "new_session_id",
    "profwin_version",
    "provenance",
    "read_sidecar",
    "sidecar_info",
    "sidecar_path",
    "write_sidecar",
]

KEY = "profwin"
"""The top-level key of a trace that holds its provenance."""
SIDECAR_SUFFIX = ".profwin.json"
MAX_SIDECAR_BYTES = 1 << 16
"""A sidecar larger than this is not profwin's: it is damaged (:func:`sidecar_info` says so)."""
FORMAT = Format("profwin.provenance", version=1)
"""The provenance's format, in a sidecar and under a trace's ``"profwin"`` key alike."""
_READ: OrderedDict[tuple[str, tuple[int, ...]], tuple[dict[str, Any], str]] = OrderedDict()
"""Sidecars read in this process, by path and :func:`~profwin.inputs.file_identity`: each is read
once however many tools ask (a command asks for a trace's provenance up to three times)."""
_READ_KEPT = 4096


def profwin_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("profwin-core")
    except PackageNotFoundError:
        return "0+unknown"


def new_session_id() -> str:
    """A session id that sorts by start time: ``20261201T043700Z-3f9a1c``."""
    import secrets  # here: its hmac and OpenSSL imports are 2 ms of every trace command's start

    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


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
    data = FORMAT.stamp({k: v for k, v in info.items() if v is not None})
    return write_atomic(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


def read_sidecar(trace: str | Path) -> dict[str, Any]:
    """The sidecar of ``trace``, or ``{}`` when there is none or it cannot be read
    (:func:`sidecar_info` says why)."""
    return sidecar_info(trace)[0]


def sidecar_info(trace: str | Path) -> tuple[dict[str, Any], str]:
    """The sidecar of ``trace`` and ``""``; ``({}, "")`` when there is none; ``({}, why)`` when
    one is there but cannot be read: not a regular file (profwin writes its sidecars as regular
    files, so a FIFO is refused at once, never waited on), larger than :data:`MAX_SIDECAR_BYTES`,
    not a JSON object within the spec bounds, or a format version this profwin does not read.
    Each sidecar is read once in a process while it is unchanged (:func:`~profwin.inputs.file_identity`)."""
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
        FORMAT.check(data)
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
    inside = header.get(KEY) if header is not None else None
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
