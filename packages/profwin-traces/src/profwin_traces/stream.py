"""One JSON document read from a file in one pass, in bounded memory: what every streaming reader shares.

:class:`JsonStream` reads a plain or gzip file (recognised by its magic bytes) into a sliding
text buffer of a chunk or two, and decodes one value at a time at its cursor with the C scanner
behind :meth:`json.JSONDecoder.raw_decode`. The bounds live here, once for every reader built on
it: one value over :data:`MAX_VALUE_CHARS` is refused once that much is buffered; whitespace is
skipped by a regular expression a buffer at a time (a flood of it is dropped as it is read,
never kept); with a ``limit``, at most that many decompressed bytes plus one are read, so a gzip
bomb stops there. :meth:`JsonStream.array_batches` decodes a long array a buffer at a time in
one call instead of one value at a time (what makes a column of numbers fast to read).

:class:`profwin_traces.TraceReader` reads Chrome traces with it; plugins get it from
:mod:`profwin.plugin` (profwin-memory reads its timelines with it).
"""

from __future__ import annotations

import codecs
import functools
import gzip
import importlib
import importlib.util
import io
import json
import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar, cast

from profwin.plugin import ConfigError, checked, shown
from profwin.plugin.files import open_input

__all__ = [
    "BATCH_CHARS",
    "CHUNK_CHARS",
    "MAX_VALUE_CHARS",
    "JsonStream",
    "Progress",
    "fast_installed",
    "fast_module",
    "gzip_reader",
]

Progress = Callable[[int, int], None]
"""``progress(bytes_done, bytes_total)``: bytes of the file on disk (compressed, for gzip)."""

CHUNK_CHARS = 1 << 20
"""Characters decoded per read; the buffer holds one or two of these plus one partial value."""
MAX_VALUE_CHARS = 16 << 20
"""One value (an event, a top-level value, an array's element) larger than this (JSON text) is refused."""
BATCH_CHARS = 1 << 18
"""Characters of an array decoded in one call by :meth:`JsonStream.array_batches`: what it holds
decoded is bounded too (``0,0,…``, the densest, is 128 Ki floats, 4 MiB of Python objects)."""

_GZIP_MAGIC = b"\x1f\x8b"
_Stream = TypeVar("_Stream", bound="JsonStream")
_EDGE = 32  # characters from the buffer's end within which a decode error may be a cut, not a fault
_WHITESPACE = re.compile(r"[ \t\n\r]*")


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


@checked
class JsonStream:
    """One pass over the JSON document in ``path`` (see the module docstring).

    ``what`` names the document in messages ("trace"), ``expected`` says what it should be;
    every error is ``error(path, message)``, the message naming the place (a character offset
    in the decoded text, and the value's name as the caller gives it). ``limit``: the most
    bytes read (decompressed, for gzip); ``None`` for no limit.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        what: str,
        expected: str,
        error: Callable[[Path, str], Exception],
        limit: int | None = None,
        progress: Progress | None = None,
        chunk_chars: int = CHUNK_CHARS,
        fast: bool = True,
    ) -> None:
        self.path = Path(path)
        self.what = what
        self.expected = expected
        self.error = error
        try:
            # core's one opener: a FIFO with no writer or a device fails at once instead of hanging.
            self._file: IO[bytes] = open_input(self.path, what=what)
        except OSError as exc:
            raise error(self.path, f"cannot open: {exc.strerror or exc}") from None
        except ConfigError as exc:
            raise error(self.path, f"cannot open: {exc}") from None
        if not self._file.seekable():
            self._file.close()
            raise error(self.path, f"cannot open: it is a FIFO or pipe; a {what} must be a regular file")
        try:
            self.size = self.path.stat().st_size
            self.compressed = self._file.read(2) == _GZIP_MAGIC
            self._file.seek(0)
        except OSError as exc:  # a device that opens but cannot be read (/proc/self/mem: EIO)
            self._file.close()
            raise error(self.path, f"read failed: {exc}") from None
        self._counter = _CountingReader(self._file)
        binary: IO[bytes] = io.BufferedReader(self._counter, buffer_size=1 << 20)
        if self.compressed:
            binary = gzip_reader(fast)(fileobj=binary, mode="rb")
        self._binary = binary
        self._limit = limit
        self._read_bytes = 0  # decompressed
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._chunk = chunk_chars
        self._progress = progress
        self._buf = ""
        self._pos = 0
        self._offset = 0  # characters dropped from the front of the buffer so far
        self._eof = False
        decoder: Any = json.JSONDecoder()  # scan_once is the C scanner behind raw_decode
        self._scan = decoder.scan_once

    # -- context manager ---------------------------------------------------------------------

    def __enter__(self: _Stream) -> _Stream:
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

    @property
    def at(self) -> int:
        """The cursor, in characters of the decoded file."""
        return self._offset + self._pos

    # -- buffer ------------------------------------------------------------------------------

    def _read(self, into: memoryview | None = None) -> Any:
        """The next block of the (decompressed) file, ``b""`` at its end; or, given ``into``,
        as much as fits read into it, and how many bytes that was (0 at the end)."""
        room = self._chunk if into is None else len(into)
        if self._limit is not None:
            room = min(room, self._limit + 1 - self._read_bytes)  # one byte past the limit, to know it is passed
        try:
            if into is None:
                data = self._binary.read(room)
                n = len(data)
            else:
                data = n = self._binary.readinto(into[:room])  # type: ignore[attr-defined]
        except EOFError:
            raise self.error(self.path, "the gzip stream is truncated (the file ends before the end-of-stream marker)") from None
        except _gzip_errors() as exc:
            raise self.error(self.path, f"corrupt gzip data ({exc})") from None
        except OSError as exc:
            raise self.error(self.path, f"read failed: {exc}") from None
        self._read_bytes += n
        if self._limit is not None and self._read_bytes > self._limit:
            raise self.error(
                self.path,
                f"holds more than {self._limit:,} bytes{' decompressed' if self.compressed else ''}, the limit for a {self.what}",
            )
        if not n:
            self._eof = True
        if self._progress is not None:
            self._progress(self._counter.done, self.size)
        return data

    def _text(self, data: bytes) -> str:
        """``data``, the last bytes read so far, as text (a character they cut is held for the next)."""
        held = len(self._decoder.getstate()[0])  # the cut character's first bytes, before data
        try:
            return self._decoder.decode(data, final=self._eof)
        except UnicodeDecodeError as exc:  # exc.start counts from the held bytes
            at = self._read_bytes - len(data) - held + exc.start
            where = "of the decompressed text " if self.compressed else ""
            raise self.error(
                self.path, f"not UTF-8 text at offset {at:,} {where}({exc.reason}); expected {self.expected}"
            ) from None

    def _fill(self) -> bool:
        """Append one chunk to the buffer, dropping what was consumed; False at end of file."""
        if self._eof:
            return False
        data = self._read()
        text = self._text(data)
        if self._pos:
            self._offset += self._pos
            self._buf = self._buf[self._pos :]
            self._pos = 0
        self._buf += text
        return bool(text) or not self._eof

    # -- values ------------------------------------------------------------------------------

    def skip_ws(self) -> str:
        """Skip whitespace; return the next character ('' at end of file) without consuming it."""
        while True:
            self._pos = _WHITESPACE.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        """Consume the next non-whitespace character, one of ``chars`` (``what`` names it in the error)."""
        c = self.skip_ws()
        if not c or c not in chars:
            found = repr(c) if c else "the end of the file"
            raise self.error(self.path, f"expected {what} at character {self.at}, found {found}")
        self._pos += 1
        return c

    def value(self, what: str) -> tuple[Any, int, int]:
        """Decode the JSON value at the cursor (``what`` names it in errors): ``(value, start, end)``
        as buffer positions, valid until the next read."""
        self.skip_ws()
        start = self._pos
        while True:
            try:
                value, end = self._scan(self._buf, start)
            except StopIteration as stop:
                # The C scanner raises this, with the failing position, for a missing value.
                if stop.value < len(self._buf) - _EDGE:
                    raise self.error(
                        self.path, f"invalid JSON in {what}: expected a value at character {self._offset + stop.value}"
                    ) from None
            except json.JSONDecodeError as exc:
                # Text cut by the chunk edge fails at the edge, or at the start of a string
                # still open there; an error anywhere else is in the file itself.
                if exc.pos < len(self._buf) - _EDGE and not exc.msg.startswith("Unterminated string"):
                    raise self.error(
                        self.path, f"invalid JSON in {what} at character {self._offset + exc.pos}: {exc.msg}"
                    ) from None
            except ValueError as exc:  # not a JSONDecodeError: Python's int-string limit (4,300 digits)
                raise self.error(self.path, f"invalid number in {what} at character {self._offset + start}: {exc}") from None
            except RecursionError:
                raise self.error(
                    self.path,
                    f"{what} at character {self._offset + start} is nested too deeply (about 1,000 levels, "
                    "Python's recursion limit)",
                ) from None
            else:
                # A number can be cut by the chunk edge ("12" of "12.5") and still decode.
                if end < len(self._buf) or self._eof:
                    self._pos = end
                    return value, start, end
            if self._eof:
                raise self.error(self.path, f"the file ends inside {what}, at character {self._offset + start}; it is truncated")
            if len(self._buf) - start > MAX_VALUE_CHARS:
                raise self.error(
                    self.path, f"{what} at character {self._offset + start} is over {MAX_VALUE_CHARS >> 20} MiB or invalid JSON"
                )
            self._fill()
            start = self._pos  # _fill moved the buffer's start to the cursor

    def array_batches(
        self, what: str, decode: Callable[[str], Sequence[Any]] | None = None
    ) -> Iterator[tuple[Sequence[Any], bool]]:
        """The elements of the JSON array at the cursor, in order, as ``(elements, checked)``.

        Up to :data:`BATCH_CHARS` at a time (to the array's ``]`` or the last ``,`` within them) is
        decoded in one call: by ``decode`` (given the text ``[...]``; it checks the elements and
        raises ``ValueError`` for any it refuses; it may answer any sequence as long, such as a
        ``range`` for a caller that only counts), then ``checked`` is true; else, or when
        ``decode`` refuses, by the standard decoder, unchecked. Text that neither decodes (a
        ``,`` or ``]`` inside a string, an element that is not valid JSON, one that ``decode``
        refuses) is read one element at a time, so the caller's check, or this reader's error,
        names the very element (``what[i]``). The caller checks what is not ``checked``."""
        self.expect("[", f"'[' starting {what}")
        if self.skip_ws() == "]":
            self._pos += 1
            return
        count = 0
        plain = json.JSONDecoder().decode
        while True:
            cut = self._cut()
            text = self._buf[self._pos : cut]
            batch: Sequence[Any] | None = None
            checked = decode is not None
            if decode is not None:
                try:
                    batch = decode(f"[{text}]")
                except (ValueError, RecursionError):  # msgspec.DecodeError and ValidationError are ValueErrors
                    checked = False
            if batch is None:
                try:
                    batch = plain(f"[{text}]")
                except (ValueError, RecursionError):  # JSONDecodeError, or Python's int-string limit
                    batch = None
            if batch:  # an empty batch ("1,]" cut after its ",") is an error the one-at-a-time read names
                count += len(batch)
                yield batch, checked
                self._pos = cut + 1
                if self._buf[cut] == "]":
                    return
                continue
            stop = self._offset + cut  # one element at a time up to the cut, or one when nothing is buffered
            while True:
                element, _, _ = self.value(f"{what}[{count}]")
                count += 1
                yield [element], False
                if self.expect(",]", f"',' or ']' after {what}[{count - 1}]") == "]":
                    return
                if self.at > stop:
                    break

    def _cut(self) -> int:
        """Where the batch at the cursor ends: the ``]`` ending the array, else the last ``,``,
        within :data:`BATCH_CHARS` of the cursor (the buffer filled while it holds fewer); the
        cursor when neither is there."""
        self.skip_ws()
        searched = self._pos
        while True:
            stop = self._pos + BATCH_CHARS
            end = self._buf.find("]", searched, stop)
            if end >= 0:
                return end
            comma = self._buf.rfind(",", searched, stop)
            if comma >= 0:
                return comma
            searched = len(self._buf) - self._pos  # where the search goes on once _fill moved the cursor to 0
            if searched >= BATCH_CHARS or not self._fill():
                return self._pos

    def end(self) -> None:
        """Nothing but whitespace may follow the document."""
        if self.skip_ws():
            raise self.error(self.path, f"unexpected data after the {self.what} at character {self.at}")
        if self._progress is not None:
            self._progress(self.size, self.size)


@checked
def fast_installed(name: str) -> bool:
    """Whether the module ``name`` (of the ``fast`` extra) is installed and ``PROFWIN_TRACES_FAST``
    is not ``0``, without importing it (a dotted name's parent package is imported)."""
    return _fast(name) and importlib.util.find_spec(name) is not None


@checked
def fast_module(name: str) -> Any:
    """The module ``name`` (of the ``fast`` extra) when importable and ``PROFWIN_TRACES_FAST``
    is not ``0``, else ``None``."""
    if not _fast(name):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _fast(name: str) -> bool:
    """Whether the ``fast`` extra is on (``PROFWIN_TRACES_FAST`` is not ``0``); ``name`` must be a module name."""
    if not all(part.isidentifier() for part in name.split(".")):
        raise ConfigError(f"must be a module name such as 'msgspec' (got {shown(name)})", path="name")
    return os.environ.get("PROFWIN_TRACES_FAST", "1") != "0"


@functools.cache
def _isal() -> Any:
    """isal's ``igzip`` module (the ``fast`` extra) unless ``PROFWIN_TRACES_FAST`` is ``0``, else ``None``."""
    return fast_module("isal.igzip")


def gzip_reader(fast: bool = True) -> Callable[..., IO[bytes]]:
    """The class reading a gzip stream: ISA-L's ``IGzipFile`` (same interface and errors as
    :class:`gzip.GzipFile`, about 3x zlib's speed) with the ``fast`` extra, else the standard one."""
    igzip = _isal() if fast else None
    return cast("Callable[..., IO[bytes]]", gzip.GzipFile if igzip is None else igzip.IGzipFile)


def _gzip_errors() -> tuple[type[Exception], ...]:
    """What a gzip reader raises for corrupt data: isal's error (zlib.error's counterpart) too, where isal is in use."""
    igzip = _isal()
    return (gzip.BadGzipFile, zlib.error) + (() if igzip is None else (igzip.isal_zlib.error,))
