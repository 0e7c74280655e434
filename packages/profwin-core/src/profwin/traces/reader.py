"""Streaming reader for Chrome/Kineto trace files (``.json`` or gzip), in bounded memory.

A trace is ``{"schemaVersion": ..., "traceEvents": [ {...}, {...}, ... ], "traceName": ...}``
(Kineto puts some keys after the array) or, in the Chrome format's array form, a bare
``[ {...}, ... ]``. The reader decodes the top-level keys one at a time and the event array one
event at a time with the C scanner behind :meth:`json.JSONDecoder.raw_decode`, over a sliding
text buffer of a few MiB, so memory does not grow with the file. It yields each event together
with its exact source text, so :func:`profwin.traces.trim` copies kept events byte for byte
instead of re-encoding them.

Why the stdlib and not ijson/msgspec/orjson: see docs/traces.md (measured there).
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

__all__ = ["CHUNK_CHARS", "Progress", "TraceError", "TraceReader", "read_trace"]

Progress = Callable[[int, int], None]
"""``progress(bytes_done, bytes_total)``: bytes of the file on disk (compressed, for gzip)."""

CHUNK_CHARS = 1 << 20
"""Characters decoded per read; the buffer holds one or two of these plus one partial event."""

_GZIP_MAGIC = b"\x1f\x8b"
_EDGE = 32  # characters from the buffer's end within which a decode error may be a cut, not a fault
_MAX_VALUE_CHARS = 64 << 20  # one event or top-level value larger than this is treated as corrupt
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_EXPECTED = "a Chrome/Kineto trace: a JSON object with a 'traceEvents' array (or a JSON array of events)"


class TraceError(ValueError):
    """A trace file cannot be used: unreadable, not a trace, no step markers, or a window
    outside it. The message starts with the file and says what was expected."""

    def __init__(self, path: str | Path, message: str) -> None:
        self.path = str(path)
        self.reason = message
        super().__init__(f"{path}: {message}")


class _CountingReader(io.RawIOBase):
    """Counts the bytes read from the file on disk, which is what progress reports."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.done = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        self.done += n or 0
        return n or 0


class TraceReader:
    """One pass over one trace file. Use :func:`read_trace`; iterate :meth:`events` or
    :meth:`raw_events` once, then read :attr:`header` (complete only after the events)."""

    def __init__(self, path: str | Path, *, progress: Progress | None = None, chunk_chars: int = CHUNK_CHARS) -> None:
        self.path = Path(path)
        try:
            self._file: IO[bytes] = open(self.path, "rb")  # noqa: SIM115 (closed by close())
        except OSError as exc:
            raise TraceError(self.path, f"cannot open: {exc.strerror or exc}") from None
        self.size = self.path.stat().st_size
        self.compressed = self._file.read(2) == _GZIP_MAGIC
        self._file.seek(0)
        self._counter = _CountingReader(self._file)
        binary: IO[bytes] = io.BufferedReader(self._counter, buffer_size=1 << 20)
        if self.compressed:
            binary = gzip.GzipFile(fileobj=binary, mode="rb")  # type: ignore[assignment]
        self._binary = binary
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._chunk = chunk_chars
        self._progress = progress
        self._buf = ""
        self._pos = 0
        self._offset = 0  # characters dropped from the front of the buffer so far
        self._eof = False
        decoder: Any = json.JSONDecoder()  # scan_once is the C scanner behind raw_decode
        self._scan = decoder.scan_once
        self.header: dict[str, Any] = {}
        """Top-level keys other than ``traceEvents``, in file order (those after the array
        appear once the events have been read)."""
        self.keys_before_events: list[str] = []
        """Top-level keys that come before ``traceEvents`` in the file."""
        self.events_read = 0
        self._started = False

    # -- context manager ---------------------------------------------------------------------

    def __enter__(self) -> TraceReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._binary.close()
        self._file.close()

    @property
    def bytes_done(self) -> int:
        """Bytes of the file on disk read so far."""
        return self._counter.done

    # -- buffer ------------------------------------------------------------------------------

    def _fill(self) -> bool:
        """Append one chunk to the buffer, dropping what was consumed; False at end of file."""
        if self._eof:
            return False
        try:
            data = self._binary.read(self._chunk)
            text = self._decoder.decode(data, final=not data)
        except EOFError:
            raise TraceError(self.path, "the gzip stream is truncated (the file ends before the end-of-stream marker)") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise TraceError(self.path, f"corrupt gzip data ({exc})") from None
        except UnicodeDecodeError as exc:
            raise TraceError(self.path, f"not UTF-8 text near byte {exc.start}; expected {_EXPECTED}") from None
        except OSError as exc:
            raise TraceError(self.path, f"read failed: {exc}") from None
        if self._pos:
            self._offset += self._pos
            self._buf = self._buf[self._pos :]
            self._pos = 0
        self._buf += text
        if not data:
            self._eof = True
        if self._progress is not None:
            self._progress(self._counter.done, self.size)
        return bool(text) or not self._eof

    def _skip_ws(self) -> str:
        """Skip whitespace; return the next character ('' at end of file) without consuming it."""
        while True:
            self._pos = _WHITESPACE.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                return ""

    def _expect(self, chars: str, what: str) -> str:
        c = self._skip_ws()
        if not c or c not in chars:
            found = repr(c) if c else "the end of the file"
            raise TraceError(self.path, f"expected {what} at character {self._offset + self._pos}, found {found}")
        self._pos += 1
        return c

    def _value(self, what: str) -> tuple[Any, int, int]:
        """Decode the JSON value at the cursor: ``(value, start, end)`` as buffer positions."""
        self._skip_ws()
        start = self._pos
        while True:
            try:
                value, end = self._scan(self._buf, start)
            except StopIteration as stop:
                # The C scanner raises this, with the failing position, for a missing value.
                if stop.value < len(self._buf) - _EDGE:
                    raise TraceError(
                        self.path, f"invalid JSON in {what}: expected a value at character {self._offset + stop.value}"
                    ) from None
            except json.JSONDecodeError as exc:
                # Text cut by the chunk edge fails at the edge, or at the start of a string
                # still open there; an error anywhere else is in the file itself.
                if exc.pos < len(self._buf) - _EDGE and not exc.msg.startswith("Unterminated string"):
                    raise TraceError(
                        self.path, f"invalid JSON in {what} at character {self._offset + exc.pos}: {exc.msg}"
                    ) from None
            else:
                # A number can be cut by the chunk edge ("12" of "12.5") and still decode.
                if end < len(self._buf) or self._eof:
                    self._pos = end
                    return value, start, end
            if self._eof:
                raise TraceError(self.path, f"the file ends inside {what}, at character {self._offset + start}; it is truncated")
            if len(self._buf) - start > _MAX_VALUE_CHARS:
                raise TraceError(
                    self.path, f"{what} at character {self._offset + start} is over {_MAX_VALUE_CHARS >> 20} MiB or invalid JSON"
                )
            self._fill()
            start = self._pos  # _fill moved the buffer's start to the cursor

    # -- the document ------------------------------------------------------------------------

    def raw_events(self) -> Iterator[tuple[dict[str, Any], int, str]]:
        """Yield ``(event, offset, text)`` for each event: ``text`` is its exact JSON source and
        ``offset`` the character where it starts (what :func:`copy_ranges` takes)."""
        if self._started:
            raise RuntimeError("a TraceReader can be iterated once")
        self._started = True
        first = self._expect("{[", "'{' or '[' starting " + _EXPECTED)
        if first == "[":
            yield from self._array()
            self._end()
            return
        found = False
        if self._skip_ws() == "}":
            self._pos += 1
        else:
            while True:
                key, _, _ = self._value("a top-level key")
                if not isinstance(key, str):
                    raise TraceError(self.path, f"expected a string key at the top level, found {key!r}")
                self._expect(":", f"':' after top-level key {key!r}")
                if key == "traceEvents":
                    if self._skip_ws() != "[":
                        raise TraceError(self.path, f"'traceEvents' must be an array; expected {_EXPECTED}")
                    self._pos += 1
                    found = True
                    self.keys_before_events = list(self.header)
                    yield from self._array()
                else:
                    self.header[key], _, _ = self._value(f"top-level key {key!r}")
                if self._expect(",}", "',' or '}' after a top-level value") == "}":
                    break
        self._end()
        if not found:
            raise TraceError(self.path, f"no 'traceEvents' key (top-level keys: {sorted(self.header)}); expected {_EXPECTED}")

    def _array(self) -> Iterator[tuple[dict[str, Any], int, str]]:
        if self._skip_ws() == "]":
            self._pos += 1
            return
        while True:
            event, start, end = self._value(f"event {self.events_read}")
            if not isinstance(event, dict):
                raise TraceError(
                    self.path, f"event {self.events_read} is {type(event).__name__}, not an object; expected {_EXPECTED}"
                )
            self.events_read += 1
            yield event, self._offset + start, self._buf[start:end]
            if self._expect(",]", "',' or ']' after an event") == "]":
                return

    def _end(self) -> None:
        if self._skip_ws():
            raise TraceError(self.path, f"unexpected data after the trace at character {self._offset + self._pos}")
        if self._progress is not None:
            self._progress(self.size, self.size)

    def events(self) -> Iterator[dict[str, Any]]:
        """Yield each event as a dict."""
        for event, _, _ in self.raw_events():
            yield event

    def text_chunks(self) -> Iterator[tuple[int, str]]:
        """Yield ``(offset, text)`` for the whole decoded file in order, without parsing it."""
        if self._started:
            raise RuntimeError("a TraceReader can be iterated once")
        self._started = True
        while self._fill():
            yield self._offset, self._buf
            self._pos = len(self._buf)
        if self._progress is not None:
            self._progress(self.size, self.size)


def read_trace(path: str | Path, *, progress: Progress | None = None) -> TraceReader:
    """Open ``path`` (gzip is recognised by its magic bytes, whatever the suffix) for one pass."""
    return TraceReader(path, progress=progress)
