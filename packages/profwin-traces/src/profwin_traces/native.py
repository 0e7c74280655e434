"""The compiled event scanner (``_scan.c``), built on first use and cached, or ``None``.

The wheel stays pure Python: the scanner's C source ships in it and is compiled the first time
a trace is read, with the C compiler Python itself was built with (``CC`` overrides it) and
Python's headers, into ``~/.cache/profwin/native`` (``XDG_CACHE_HOME`` moves it), keyed by a hash
of the source, the interpreter and the compiler: one build per machine and Python, about a
second. Where there is no compiler, no headers or no writable cache, or the build fails, the
reader decodes with msgspec as before (the same results, slower); ``PROFWIN_TRACES_NATIVE=0``
(or ``PROFWIN_TRACES_FAST=0``, the whole fast path) turns the scanner off, and :func:`native_status` says which way it went.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shlex
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from profwin.plugin import ProfwinError

__all__ = ["SOURCE", "compiled", "native_status"]

SOURCE = Path(__file__).with_name("_scan.c")
_BUILD_SECONDS = 300


def compiled() -> Any:
    """The compiled module (``Scanner``; ``nest_kids``, the self times' sums), or ``None`` (see the module)."""
    return None if _turned_off() else _built()[0]


def native_status() -> str:
    """One line: the scanner in use and where it was built, or why the reader does without it."""
    off = _turned_off()
    if off:
        return f"off ({off}=0)"
    module, why = _built()
    return f"on ({module.__file__})" if module is not None else f"unavailable: {why}"


def _turned_off() -> str:
    """The variable that turns the scanner off (``PROFWIN_TRACES_FAST=0``, the whole fast path,
    or ``PROFWIN_TRACES_NATIVE=0``), or ``""``."""
    return next((name for name in ("PROFWIN_TRACES_FAST", "PROFWIN_TRACES_NATIVE") if os.environ.get(name, "1") == "0"), "")


@functools.cache
def _built() -> tuple[Any, str]:
    """The loaded module and ``""``, or ``None`` and why not; built at most once per process."""
    try:
        return _load(), ""
    except _Unavailable as exc:
        return None, str(exc)


class _Unavailable(ProfwinError):
    """Why the scanner cannot be built or loaded here (never raised out of this module)."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "profwin" / "native"


def _load() -> Any:
    include = sysconfig.get_paths().get("include") or ""
    if not (Path(include) / "Python.h").is_file():
        raise _Unavailable(f"no Python.h in {include!r} (install Python's development headers)")
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    try:
        source = SOURCE.read_bytes()
    except OSError as exc:
        raise _Unavailable(f"cannot read {SOURCE}: {exc.strerror or exc}") from None
    key = hashlib.sha256(b"\0".join([source, " ".join(compiler).encode(), sys.version.encode(), include.encode()]))
    target = _cache_dir() / f"_scan-{key.hexdigest()[:16]}{suffix}"
    if not target.is_file():
        _compile(compiler, include, target)
    spec = importlib.util.spec_from_file_location("profwin_traces._scan", target)
    if spec is None or spec.loader is None:
        raise _Unavailable(f"cannot load {target}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise _Unavailable(f"cannot load {target}: {exc}") from None
    return module


def _compile(compiler: list[str], include: str, target: Path) -> None:
    """Build into a temporary file beside ``target`` and rename it into place, so that processes
    building at once each load a whole library."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".build-", suffix=target.suffix)
        os.close(fd)
    except OSError as exc:
        raise _Unavailable(f"cannot write to {target.parent}: {exc.strerror or exc}") from None
    import subprocess  # here: 3 ms of every trace command's start, and only a build runs it

    link = ["-undefined", "dynamic_lookup"] if sys.platform == "darwin" else []
    command = [*compiler, "-O2", "-shared", "-fPIC", f"-I{include}", *link, str(SOURCE), "-o", tmp]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_BUILD_SECONDS, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise _Unavailable(f"{compiler[0]} failed (exit {done.returncode}): {last[:200]}")
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError) as exc:
        raise _Unavailable(f"cannot run {compiler[0]}: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
