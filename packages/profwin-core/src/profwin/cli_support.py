"""What every profwin command line shares: no traceback reaches a user, and numbers are checked.

:func:`run_cli` runs a command's main function and turns whatever escapes it into one line and a
documented exit code:

| exit code | meaning |
|---|---|
| 0 / 1 | the command's own answer (e.g. ``validate``: 1 when the spec is invalid) |
| 2 | an error: bad input, a missing plugin, an unreadable file, a bug in profwin |
| 130 | interrupted (Ctrl-C, SIGINT) |
| 141 | stdout was closed early (piped into ``head``): a quiet exit |
| 143 | terminated (SIGTERM); files being written are removed first |

An error is printed as ``PROG: error: MESSAGE`` on stderr, or, when the command line has
``--json``, as ``{"error": MESSAGE, "path": PATH}`` on stdout so a caller parsing JSON always
gets JSON. ``PROFWIN_TRACEBACK=1`` prints the traceback as well, for bug reports.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from profwin.errors import ConfigError, PluginError, Terminated, shown
from profwin.traces.reader import TraceError

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "int_arg", "run_cli", "seconds_arg"]

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
EXIT_TERMINATED = 143


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _message(exc: BaseException) -> tuple[str, str]:
    """(one-line message, path) for an exception that escaped a command."""
    if isinstance(exc, (ConfigError, PluginError, TraceError)):
        text, path = str(exc), getattr(exc, "path", "")
    elif isinstance(exc, OSError):
        path = os.fspath(exc.filename) if exc.filename is not None else ""
        text = f"{path}: {exc.strerror}" if path and exc.strerror else f"{type(exc).__name__}: {exc}"
    else:
        text, path = f"internal error, please report it: {type(exc).__name__}: {exc}", ""
    return " ".join(text.split()) or type(exc).__name__, str(path)


def _quiet_stdout() -> None:
    # The Python docs' recipe for SIGPIPE: point stdout at devnull so the interpreter's final
    # flush does not raise a second BrokenPipeError on the way out.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None, *, prog: str) -> int:
    """Run ``main(argv)`` and return its exit code, or the code for what escaped it (table above)."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous: Any = signal.signal(signal.SIGTERM, _on_sigterm) if in_main_thread else None
    try:
        try:
            code = main(argv)
            sys.stdout.flush()
            return code
        finally:
            if in_main_thread:
                signal.signal(signal.SIGTERM, previous)
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print(f"{prog}: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except Exception as exc:
        if os.environ.get("PROFWIN_TRACEBACK"):
            traceback.print_exc()
        text, path = _message(exc)
        try:
            if as_json:
                json.dump({"error": text, "path": path}, sys.stdout)
                sys.stdout.write("\n")
                sys.stdout.flush()
            else:
                print(f"{prog}: error: {text}", file=sys.stderr)
        except BrokenPipeError:
            _quiet_stdout()
        return EXIT_ERROR


def int_arg(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for an integer in ``[minimum, maximum]``, with the rule in its message."""
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
    :data:`profwin.http.MAX_TIMEOUT`, checked by :func:`profwin.http.check_timeout`."""
    from profwin.http import MAX_TIMEOUT, check_timeout

    try:
        return check_timeout(float(text))
    except (ValueError, ConfigError):
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds > 0 and <= {MAX_TIMEOUT:,.0f} (got {shown(text)})"
        ) from None
