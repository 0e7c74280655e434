"""What every profwin command line shares: no traceback reaches a user, and numbers are checked.

How it works, and why: docs/internals.md, ``profwin.cli_runner``.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import errno
import io
import json
import math
import os
import re
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn, TextIO

from profwin.arguments import checked
from profwin.errors import ConfigError, PluginError, ProfwinError, Terminated, shown
from profwin.window import MAX_STEP, Window

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "PERFETTO_UI",
    "CliParser",
    "UsageError",
    "clean_text",
    "cluster_option",
    "how_to_view",
    "int_arg",
    "print_json",
    "ray_address_first",
    "run_cli",
    "seconds_arg",
    "step_arg",
    "window_arg",
]

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
EXIT_TERMINATED = 143


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ERASE_LINE = "\x1b[K"


class UsageError(ConfigError):
    """A command line argparse refused; ``usage`` is the (sub)command's usage text."""

    def __init__(self, message: str, *, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage = usage
        self.prog = prog


# Whether the command line being run has --json: what argparse prints itself (help, version) is
# then a JSON document too.
_as_json: contextvars.ContextVar[bool] = contextvars.ContextVar("profwin_cli_json", default=False)


class CliParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are :class:`UsageError` exceptions instead of
    ``sys.exit(2)``, so :func:`run_cli` reports them like any error (as JSON under ``--json``),
    and whose ``--help`` and ``--version`` output is one JSON document under ``--json``.
    Sub-command parsers inherit the class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A word that starts with "-" and a digit is a value, never an option: argparse reads
        # only "-5" and "-.5" so; "-5:10" (a window) would otherwise be an unknown option and
        # leave WINDOW "required". No profwin option looks like a number.
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, usage=self.format_usage(), prog=self.prog)

    def print_help(self, file: Any = None) -> None:
        if _as_json.get() and file in (None, sys.stdout):
            usage = " ".join(self.format_usage().split()).removeprefix("usage: ")
            print_json({"prog": self.prog, "usage": usage, "help": self.format_help()})
            return
        super().print_help(file)

    def print_message(self, message: str) -> None:
        """Print ``message`` on stdout, as ``{"prog", "message"}`` under ``--json`` (``--version``)."""
        self._print_message(message, sys.stdout)

    def _print_message(self, message: str, file: Any = None) -> None:
        if _as_json.get() and message and file in (None, sys.stdout):
            print_json({"prog": self.prog, "message": message.strip()})
            return
        super()._print_message(message, file)


def clean_text(text: str) -> str:
    """``text`` with control characters other than newline and tab escaped (``\x1b``), for a
    terminal: text from servers and traces must not move the cursor or recolour the screen."""
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities (which JSON has no spelling for) as ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


_MAX_INDENT = 16


@checked
def print_json(data: Any, *, indent: int | None = 2) -> None:
    """Print ``data`` as one JSON document on stdout: the one way profwin's commands print JSON.
    NaN and infinities, which standard JSON cannot hold, are printed as ``null``; data JSON
    cannot hold at all (a set, bytes, an int past 4,300 digits) is a :class:`ConfigError`, and
    nothing is printed."""
    if indent is not None and not 0 <= indent <= _MAX_INDENT:  # json would build the indent string however long
        raise ConfigError(f"must be None or 0 to {_MAX_INDENT} spaces (got {shown(indent)})", path="indent")
    try:
        text = json.dumps(_finite(data), indent=indent, allow_nan=False)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ConfigError(f"cannot be printed as JSON: {shown(str(exc))}", path="data") from None
    sys.stdout.write(text + "\n")


class _StdoutFailed(ProfwinError, OSError):
    """Writing the command's output to stdout failed (other than its reader going away);
    ``strerror`` says so for users."""


class _ClosedStream(io.TextIOBase):
    """stdout of a process started without descriptor 1 (``>&-``): writing to it is an error."""

    def write(self, text: str) -> int:
        if text:
            raise OSError(errno.EBADF, "it is closed")
        return 0

    def isatty(self) -> bool:
        return False


class _Stdout(io.TextIOBase):
    """The command's ``sys.stdout``: remembers whether anything was printed and, for people,
    escapes control characters (see :func:`clean_text`). The first failed write is
    :class:`_StdoutFailed` (or ``BrokenPipeError``), whatever raised it below; what is written
    after it is dropped (the failure is reported once). Only the command's own thread writes
    here: what another thread prints goes to stderr."""

    def __init__(self, stream: TextIO, *, escape: bool) -> None:
        self._stream = stream
        self._escape = escape
        self._owner = threading.get_ident()
        self.written = False
        self.failure: OSError | None = None
        """The first failed write (kept: argparse and others swallow an ``OSError`` from print)."""

    def write(self, text: str) -> int:
        if threading.get_ident() != self._owner:
            # A library's own thread is not the command's output: Ray's driver prints a node it
            # marked dead from a thread of its own, on sys.stdout, in the middle of a collection.
            return sys.stderr.write(text) if sys.stderr is not None else len(text)
        self.written = self.written or bool(text)
        self._guarded(lambda: self._stream.write(clean_text(text) if self._escape else text))
        return len(text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call: Callable[[], object]) -> None:
        if self.failure is not None:
            return
        try:
            call()
        except (OSError, ValueError) as exc:  # ValueError: the stream was closed under us
            if isinstance(exc, (BrokenPipeError, _StdoutFailed)):
                self.failure = exc
            else:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                self.failure = _StdoutFailed(getattr(exc, "errno", None) or errno.EIO, f"cannot write to stdout: {why}")
            raise self.failure from None

    def check(self) -> None:
        """Raise the first failed write again, if any (whoever caught it, the output is lost)."""
        if self.failure is not None:
            raise self.failure

    def isatty(self) -> bool:
        return self._stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8")


@contextlib.contextmanager
def _stdout(as_json: bool) -> Iterator[_Stdout]:
    """Route the command's output (docs/internals.md): under ``--json`` fd 1 points at stderr
    and ``sys.stdout`` at a copy of the real stdout; otherwise control characters are escaped."""
    previous = sys.stdout
    with contextlib.suppress(OSError, ValueError):
        previous.flush()
    saved: int | None = None
    stream: TextIO = previous
    if as_json:
        try:
            saved = os.dup(1)
            on_fd1 = previous.fileno() == 1
        except (OSError, ValueError, io.UnsupportedOperation):
            on_fd1 = False
        if saved is not None:
            if on_fd1:
                stream = open(saved, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (closed below)
            os.dup2(2, 1)
    wrapper = _Stdout(stream, escape=not as_json)
    sys.stdout = wrapper
    try:
        yield wrapper
    finally:
        sys.stdout = previous
        try:
            wrapper.flush()
        finally:
            if stream is not previous:
                with contextlib.suppress(OSError):  # closed all the same; the flush above said why
                    stream.close()
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)


def _for_stderr(text: str) -> str:
    """``text`` with control characters escaped (see :func:`clean_text`) but for the frame of a
    progress line rewritten in place: a leading ``\\r``, and after it a trailing erase-to-end
    ``\\x1b[K``."""
    head = "\r" if text.startswith("\r") else ""
    tail = _ERASE_LINE if head and text.endswith(_ERASE_LINE) and len(text) > len(_ERASE_LINE) else ""
    return head + clean_text(text[len(head) : len(text) - len(tail)]) + tail


class _Stderr(io.TextIOBase):
    """The command's ``sys.stderr``: for people, so control characters are escaped (a file name
    or a server's text must not clear the screen), and it never raises. Once writing fails (closed,
    full, its reader gone) everything after is dropped, and the descriptor is pointed at
    ``/dev/null`` so the interpreter's last flush at exit cannot fail either (that would make the
    exit code 120)."""

    def __init__(self, stream: TextIO | None) -> None:
        self._stream = stream
        self.broken = stream is None

    def _guarded(self, call: Callable[[], object]) -> None:
        if self.broken:
            return
        try:
            call()
        except (OSError, ValueError):
            self.broken = True
            with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
                _to_devnull(self._stream.fileno() if self._stream is not None else 2)

    def write(self, text: str) -> int:
        stream = self._stream
        if stream is not None:
            self._guarded(lambda: stream.write(_for_stderr(text)))
        return len(text)

    def flush(self) -> None:
        stream = self._stream
        if stream is not None:
            self._guarded(stream.flush)

    def isatty(self) -> bool:
        try:
            return not self.broken and self._stream is not None and self._stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        if self._stream is None:
            raise io.UnsupportedOperation("stderr is closed")
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"


def _to_devnull(fd: int) -> None:
    """Point descriptor ``fd`` at ``/dev/null``."""
    devnull = os.open(os.devnull, os.O_RDWR)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@contextlib.contextmanager
def _standard_streams() -> Iterator[None]:
    """The command's stdout and stderr whatever they are (docs/internals.md): a closed
    descriptor 0, 1 or 2 is held on ``/dev/null`` (a file opened later would otherwise take its
    number and receive what is printed), stdout started closed is :class:`_ClosedStream`, and
    stderr is :class:`_Stderr`. The previous ``sys.stdout`` and ``sys.stderr`` come back after."""
    closed = [fd for fd in (0, 1, 2) if not _is_open(fd)]
    for fd in closed:
        _to_devnull(fd)
    out, err = sys.stdout, sys.stderr
    if out is None or 1 in closed:
        sys.stdout = _ClosedStream()
    sys.stderr = _Stderr(None if err is None or 2 in closed else err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _message(exc: BaseException) -> tuple[str, str]:
    """(one-line message, path) for an exception that escaped a command."""
    if isinstance(exc, ProfwinError):  # the whole family: its message is written for users
        text, path = str(exc), exc.path
    elif isinstance(exc, OSError):
        path = os.fspath(exc.filename) if exc.filename is not None else ""
        text = f"{path}: {exc.strerror}" if path and exc.strerror else f"{type(exc).__name__}: {exc}"
    else:
        text, path = f"internal error, please report it: {type(exc).__name__}: {exc}", ""
    return " ".join(text.split()) or type(exc).__name__, str(path)


def _quiet_stdout() -> None:
    # The Python docs' recipe for SIGPIPE: point stdout at devnull so the interpreter's final
    # flush does not raise a second BrokenPipeError (or a full disk's error) on the way out.
    _to_devnull(1)


def _one_line_warnings(prog: str) -> Callable[..., None]:
    """``warnings.showwarning`` for a command line: ``PROG: warning: MESSAGE`` on one line, not
    Python's file, line number and source line (a user of the CLI did not write that code)."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, *_: Any, **__: Any) -> None:
        text = " ".join(str(message).split())
        text = text.removeprefix(f"{prog}: ")
        with contextlib.suppress(OSError, ValueError):  # stderr closed: a warning is not worth failing for
            # One write: print() writes the newline apart, and a fan-out's threads warn at once.
            sys.stderr.write(f"{prog}: warning: {text}\n")

    return show


@checked
def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None, *, prog: str) -> int:
    """Run ``main(argv)`` and return its exit code, or the code for what escaped it (table above).
    Warnings print as one line each (``PROG: warning: ...``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    in_main_thread = threading.current_thread() is threading.main_thread()
    json_mode = _as_json.set(as_json)
    try:
        with _standard_streams():
            previous: Any = signal.signal(signal.SIGTERM, _on_sigterm) if in_main_thread else None
            shown_before = warnings.showwarning
            warnings.showwarning = _one_line_warnings(prog)
            try:
                return _run(main, argv, prog=prog, as_json=as_json)
            finally:
                warnings.showwarning = shown_before
                if in_main_thread:
                    signal.signal(signal.SIGTERM, previous)
    finally:
        _as_json.reset(json_mode)


def _run(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None, *, prog: str, as_json: bool) -> int:
    try:
        with _stdout(as_json) as out:
            try:
                code = main(argv)
                out.flush()
                out.check()
                return code
            except SystemExit as exc:
                # argparse's own --help and --version (after printing) end here with 0; anything
                # else calling sys.exit() did not finish the command.
                out.check()
                if exc.code in (0, None) and out.written:
                    return 0
                return _report(PluginError(f"the command ended early: something called sys.exit({exc.code!r})"), prog, as_json)
            except (BrokenPipeError, _StdoutFailed):
                raise
            except Exception as exc:
                return _report(exc, prog, as_json)
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except _StdoutFailed as exc:
        _quiet_stdout()
        print(f"{prog}: error: {exc.strerror}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print(f"{prog}: terminated", file=sys.stderr)
        return EXIT_TERMINATED


def _report(exc: BaseException, prog: str, as_json: bool) -> int:
    """Print the error for ``exc`` (docs/internals.md) and return :data:`EXIT_ERROR`."""
    if os.environ.get("PROFWIN_TRACEBACK"):
        traceback.print_exception(exc)
    text, path = _message(exc)
    if as_json:
        try:
            print_json({"error": text, "path": path}, indent=None)
            sys.stdout.flush()
            return EXIT_ERROR
        except BrokenPipeError:
            _quiet_stdout()
            return EXIT_ERROR
        except _StdoutFailed:  # the error document cannot be delivered: say it on stderr
            _quiet_stdout()
    # One line, as every error: a usage mistake adds where the whole usage is, not the usage block.
    where = f" (see: {exc.prog} --help)" if isinstance(exc, UsageError) else ""
    print(f"{prog}: error: {text}{where}", file=sys.stderr)  # escaped by _Stderr, as all a command says
    return EXIT_ERROR


@checked
def int_arg(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for an integer in ``[minimum, maximum]``, with the rule in its message.
    The bounds are integers of at most 20 digits, as the text it takes."""
    for name, bound in (("minimum", minimum), ("maximum", maximum)):
        if bound is not None and abs(bound) >= 10**20:
            raise ConfigError(f"must be an integer of at most 20 digits (got {shown(bound)})", path=name)
    if maximum is not None and maximum < minimum:
        raise ConfigError(f"must be >= minimum {minimum} (got {maximum})", path="maximum")
    rule = f"an integer >= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")

    def parse(text: str) -> int:
        stripped = text.strip()
        if not (stripped.lstrip("-").isascii() and stripped.lstrip("-").isdigit()) or len(stripped) > 20:
            raise argparse.ArgumentTypeError(f"must be {rule} (got {shown(text)})")
        value = int(stripped)
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {rule} (got {shown(text)})")
        return value

    return parse


def seconds_arg(text: str) -> float:
    """An argparse ``type`` for a deadline: seconds greater than 0 and at most
    :data:`profwin.runtime.http.MAX_TIMEOUT`, checked by :func:`profwin.runtime.http.check_timeout`."""
    from profwin.runtime.http import MAX_TIMEOUT, check_timeout

    try:
        return check_timeout(float(text))
    except (ValueError, ConfigError):
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds > 0 and <= {MAX_TIMEOUT:,.0f} (got {shown(text)})"
        ) from None


_step = int_arg(0, MAX_STEP)


@checked
def step_arg(text: str) -> int:
    """An argparse ``type`` for a step number: an integer from 0 to :data:`~profwin.window.MAX_STEP`."""
    return _step(text)


@checked
def window_arg(text: str) -> Window:
    """An argparse ``type`` for a window (``20:80``, ``20:``, ``20:80 tokens``: :meth:`Window.parse`)."""
    try:
        return Window.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@checked
def cluster_option(parser: argparse.ArgumentParser, what: str, *, required: bool = False) -> None:
    """``--ray [ADDRESS]``, the same in every command that reaches the nodes of a cluster
    (``args.ray``: ``None``, or the address, ``auto`` when none follows; :func:`ray_address_first`)."""
    parser.add_argument(
        "--ray", nargs="?", const="auto", default=None, required=required, metavar="ADDRESS",
        help=f"{what}: ADDRESS is auto (default), HOST:PORT or ray://HOST:PORT; needs profwin[ray]",
    )  # fmt: skip


_RAY_ADDRESS = re.compile(r"auto|ray://\S+|[\w.-]+:\d{1,5}|\[[0-9A-Fa-f:.]+\]:\d{1,5}")


def ray_address_first(argv: Sequence[str]) -> list[str]:
    """``--ray`` takes an optional ADDRESS: when the word after it is not one (``auto``,
    ``HOST:PORT``, ``ray://...``), it is a trace path, and ``--ray`` means ``--ray auto``."""
    out = list(argv)
    for i, word in enumerate(out[:-1]):
        if word == "--ray" and not _RAY_ADDRESS.fullmatch(out[i + 1]):
            out.insert(i + 1, "auto")
            break
    return out


PERFETTO_UI = "https://ui.perfetto.dev"


@checked
def how_to_view(paths: Sequence[str | Path]) -> str:
    """``view: open FILE in https://ui.perfetto.dev (Open trace file) or chrome://tracing (Load)``:
    the line every command that writes or names a trace ends with; both viewers read ``.json`` and
    ``.json.gz`` as written, so no step is needed before."""
    names = list(dict.fromkeys(str(p) for p in paths))
    if not names:
        return ""
    what = names[0] if len(names) == 1 else f"any of these {len(names)} files"
    return f"view: open {what} in {PERFETTO_UI} (Open trace file) or in Chrome at chrome://tracing (Load)"
