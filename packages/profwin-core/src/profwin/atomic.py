"""Writing files so that readers never see half of one, and nothing but a regular file is replaced."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from profwin.arguments import checked
from profwin.errors import ConfigError

__all__ = ["all_or_nothing", "atomic_path", "check_output_path", "write_atomic"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


@checked
def check_output_path(path: str | os.PathLike[str]) -> Path:
    """``path`` if profwin may write a file there: a new name in an existing directory, or an
    existing regular file (which is replaced). Anything else is a :class:`ConfigError`.

    Writing renames a finished file over ``path``, which would replace a FIFO, a device such as
    ``/dev/null`` or a symbolic link with a regular file; writers call this before any work.
    """
    final = Path(path)
    try:
        mode = os.lstat(final).st_mode
    except FileNotFoundError:
        parent = final.parent
        if not parent.is_dir():
            raise ConfigError(f"cannot write {str(final)!r}: its directory {str(parent)!r} does not exist") from None
        return final
    except OSError as exc:
        raise ConfigError(f"cannot write {str(final)!r}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return final
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise ConfigError(f"cannot write {str(final)!r}: it is {kind}; profwin writes only a new file or over a regular file")


@checked
@contextmanager
def atomic_path(final: Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a hidden temporary file next to ``final`` (``.NAME.PID-TOKEN.partial`` +
    ``suffix``) to write to; rename it to ``final`` when the block ends, remove it when the block
    raises.

    ``final`` must pass :func:`check_output_path`. The temporary file is created here, new and
    empty (``O_EXCL | O_NOFOLLOW``), under a name with a random token: a symbolic link planted at
    a name profwin would write to (someone else may write to the folder) is never written
    through. A crash, Ctrl-C or SIGTERM (the CLI turns it into an exception) while writing never
    leaves a truncated file under ``final``. A write that fails (the directory was removed or
    became read-only) is a :class:`ConfigError` naming ``final``, not the hidden file. ``suffix``
    serves writers that pick a format from the name (torch writes gzip to a ``.gz`` path).
    """
    final = check_output_path(final)
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp = final.with_name(f".{final.name}.{token}.partial{suffix}")
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666))
        yield tmp
        _put_in_place(tmp, final, token)
    except BaseException as exc:
        if not isinstance(exc, FileExistsError) or os.fspath(exc.filename or "") != os.fspath(tmp):
            tmp.unlink(missing_ok=True)  # ours: never remove what someone else put at that name
        # An error on the hidden file, or on an open file object (no name: a full disk, a size
        # limit), is about writing ``final``; one naming another file is the caller's own.
        if isinstance(exc, OSError) and (exc.filename is None or os.fspath(exc.filename) == os.fspath(tmp)):
            raise ConfigError(f"cannot write {str(final)!r}: {exc.strerror or exc}") from exc
        raise


@checked
def write_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through :func:`atomic_path` (a regular file or a new name only,
    never through a symbolic link; complete or not at all) and check every byte reached the
    file, so a full disk or a file-size limit is an error naming ``path``. Returns the path."""
    final = check_output_path(path)
    with atomic_path(final) as tmp:
        with open(os.open(tmp, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "wb") as f:
            written = f.write(data)
        if written != len(data) or tmp.stat().st_size != len(data):
            raise ConfigError(f"cannot write {str(final)!r}: only {tmp.stat().st_size:,} of {len(data):,} bytes reached the disk")
    return final


# -- a command's files: all of them or none --------------------------------------------------------

_lock = threading.Lock()
_open: list[list[tuple[Path, Path | None]]] = []
"""The :func:`all_or_nothing` blocks running, innermost last: each holds the files put in place in
it, with the hidden copy of the file each one replaced (``None``: it was new)."""


def _put_in_place(tmp: Path, final: Path, token: str) -> None:
    """Rename ``tmp`` over ``final``; inside :func:`all_or_nothing`, keep what it replaces first."""
    with _lock:
        if not _open:
            os.replace(tmp, final)
            return
        previous = final.with_name(f".{final.name}.{token}.previous")
        kept: Path | None = previous
        try:
            os.link(final, previous, follow_symlinks=False)
        except FileNotFoundError:
            kept = None  # a new file
        except OSError:  # no hard links here: move it aside (for a moment the name is free)
            try:
                os.replace(final, previous)
            except FileNotFoundError:
                kept = None
        os.replace(tmp, final)
        _open[-1].append((final, kept))


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """The files :func:`atomic_path` (and :func:`write_atomic`) put in place inside the block stay
    only if the block is not stopped: when Ctrl-C or SIGTERM (which the ``profwin`` commands turn
    into :class:`~profwin.errors.Terminated`) ends it, each is removed again and a regular file it
    replaced is put back. A command that writes one result (``profwin merge``, ``trim``, a plot)
    runs in one, so a SIGTERM that lands a moment after its output was renamed into place (the
    command still printing) leaves no output either: the command did not finish. An error is not
    a stop: a file written whole before it stays (the error says what failed; a file that could
    not be written whole never reached its name).

    A replaced file is kept under a hidden hard link (``.NAME.PID-TOKEN.previous``) until the
    block ends. Blocks nest: an inner block that finishes hands its files to the outer one."""
    files: list[tuple[Path, Path | None]] = []
    with _lock:
        _open.append(files)
    finished = False
    try:
        yield
        finished = True
    except Exception:
        finished = True  # an error after its files were complete (stdout closed, say) keeps them
        raise
    finally:
        with _lock:
            _open.remove(files)
            outer = _open[-1] if _open else None
            if finished and outer is not None:
                outer.extend(files)
            else:
                for final, kept in reversed(files):
                    with contextlib.suppress(OSError):
                        if finished:
                            if kept is not None:
                                kept.unlink()
                        elif kept is not None:
                            os.replace(kept, final)
                        else:
                            final.unlink()
