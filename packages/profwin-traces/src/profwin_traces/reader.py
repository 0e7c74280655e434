"""Streaming reader for Chrome/Kineto trace files (``.json`` or gzip), in bounded memory.

A trace is ``{"schemaVersion": ..., "traceEvents": [ {...}, {...}, ... ], "traceName": ...}``
(Kineto puts some keys after the array) or, in the Chrome format's array form, a bare
``[ {...}, ... ]``. The reader decodes the top-level keys one at a time and the event array one
event at a time with the C scanner behind :meth:`json.JSONDecoder.raw_decode`, over a sliding
text buffer of a few MiB, so memory does not grow with the file. It yields each event together
with where its source text is, so :func:`profwin_traces.trim` copies kept events byte for byte
instead of re-encoding them.

With msgspec installed (``pip install 'profwin-traces[fast]'``) the event array is decoded a batch
at a time instead: the buffered text up to the last ``},`` that ends an event is decoded in one
call, and its events' spans are the ``},{`` separators in it (a batch whose separators do not
match its events one to one, or that does not decode, is read the standard way). The results
are the same; see docs/traces.md for the bounds and docs/performance.md for the speed.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import gc
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from profwin.plugin import ProfwinError, checked
from profwin_traces.stream import CHUNK_CHARS, MAX_VALUE_CHARS, JsonStream, Progress, fast_module, gzip_reader

__all__ = [
    "CHUNK_CHARS",
    "MAX_HEADER_CHARS",
    "MAX_VALUE_CHARS",
    "NativeBatch",
    "Progress",
    "Record",
    "TraceError",
    "TraceReader",
    "fast_module",
    "gzip_reader",
    "numpy_or_none",
    "read_trace",
    "trace_command",
]

Record = tuple[Any, Any, Any, Any, Any, Any, Any, Any, Any]
"""``(ph, cat, name, pid, tid, ts, dur, args.correlation, args.name)``
of one event, as :meth:`TraceReader.records` yields it (absent fields are ``None``)."""

MAX_HEADER_CHARS = 16 << 20
"""All top-level values other than ``traceEvents`` together, as JSON text."""
_EXPECTED = "a Chrome/Kineto trace: a JSON object with a 'traceEvents' array (or a JSON array of events)"


class TraceError(ProfwinError, ValueError):
    """A trace file cannot be used: unreadable, not a trace, no step markers, or a window
    outside it. The message starts with the file and says what was expected."""

    def __init__(self, path: str | Path, message: str) -> None:
        self.path = str(path)
        self.reason = message
        super().__init__(f"{path}: {message}")


@contextlib.contextmanager
def trace_command(*, blas: bool = True) -> Iterator[None]:
    """Around one trace command of the CLI (summarize, diff, trim), in a process that runs trace tools only:

    - with ``blas``, numpy's OpenBLAS, when it is not loaded yet, starts one thread instead of one
      per core: the trace tools make no BLAS call, and the idle pool alone cost 0.05–0.1 CPU s per
      run on a 2-core machine (an explicit ``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS`` is kept);
    - the cyclic garbage collector pauses until the command ends: the tools make no reference
      cycles, and the collector's passes over the objects a scan decodes cost 0.02–0.04 CPU s per
      256 MiB. It is on again afterwards, for a caller that runs the CLI in its own process."""
    if blas and "numpy" not in sys.modules and not {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"} & set(os.environ):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@functools.cache
def numpy_or_none() -> Any:
    """The numpy module when importable and ``PROFWIN_TRACES_FAST`` is not ``0``, else ``None``."""
    return fast_module("numpy")


class TraceReader(JsonStream):
    """One pass over one trace file. Use :func:`read_trace`; iterate :meth:`events` or
    :meth:`raw_events` once, then read :attr:`header` (complete only after the events)."""

    def __init__(
        self, path: str | Path, *, progress: Progress | None = None, chunk_chars: int = CHUNK_CHARS, fast: bool = True
    ) -> None:
        super().__init__(
            path, what="trace", expected=_EXPECTED, error=TraceError, progress=progress, chunk_chars=chunk_chars, fast=fast
        )
        self.header: dict[str, Any] = {}
        """Top-level keys other than ``traceEvents``, in file order (those after the array
        appear once the events have been read)."""
        self.keys_before_events: list[str] = []
        """Top-level keys that come before ``traceEvents`` in the file."""
        self.events_read = 0
        self._started = False
        self._batch: Callable[[Any], list[Any]] | None = None
        self._fast = fast
        self._plain_until = 0  # events before this offset are read one at a time
        self._arrays: Any = None  # numpy, when event spans are found with it
        self._native: Any = None  # the compiled scanner (event_batches)

    # -- the document ------------------------------------------------------------------------

    def raw_events(self) -> Iterator[tuple[dict[str, Any], int, int]]:
        """Yield ``(event, offset, length)`` for each event: where its exact JSON source text
        starts (in characters of the decoded file) and how long it is."""
        for events, offsets, lengths in self._document():
            yield from zip(events, offsets, lengths, strict=True)

    def record_batches(self) -> Iterator[tuple[list[Record], list[int], list[int]]]:
        """Yield the events as ``(records, offsets, lengths)`` batches of :data:`Record` (only the
        fields the trace tools read) with where each event's text is; decoded a buffer at a time
        by msgspec when it is installed (see the module docstring)."""
        self._batch = fast_decoder() if self._fast else None
        for events, offsets, lengths in self._document():
            if type(events[0]) is dict:
                yield [_record(e) for e in events], offsets, lengths
            else:
                yield [
                    (e.ph, e.cat, e.name, e.pid, e.tid, e.ts, e.dur,
                     None if (a := e.args) is None else a.correlation, None if a is None else a.name)
                    for e in events
                ], offsets, lengths  # fmt: skip

    def event_batches(self, decode: Callable[[Any], list[Any]], *, native: Any = None) -> Iterator[tuple[Any, Any, Any]]:
        """Yield ``(events, offsets, lengths)`` batches: a buffer's worth decoded by ``decode``
        (a list of events), or single dicts where a batch cannot be taken that way. With
        ``native`` (a ``Scanner`` of :func:`profwin_traces.native.compiled`), a buffer's worth is a
        :class:`NativeBatch` of columns instead, read by the compiled scanner."""
        self._batch = decode
        self._native = native
        self._arrays = numpy_or_none()
        yield from self._document()

    def records(self) -> Iterator[tuple[Record, int, int]]:
        """Yield ``(record, offset, length)`` for each event (see :meth:`record_batches`)."""
        for records, offsets, lengths in self.record_batches():
            yield from zip(records, offsets, lengths, strict=True)

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

    def _document(self) -> Iterator[tuple[Any, Any, Any]]:
        """The events as ``(events, offsets, lengths)`` batches: one event each from the
        standard decoder, a buffer's worth from the fast one (msgspec structs, not dicts)."""
        if self._started:
            raise RuntimeError("a TraceReader can be iterated once")
        self._started = True
        first = self.expect("{[", "'{' or '[' starting " + _EXPECTED)
        if first == "[":
            yield from self._array()
            self.end()
            return
        found = False
        header_chars = 0
        if self.skip_ws() == "}":
            self._pos += 1
        else:
            while True:
                key, _, _ = self.value("a top-level key")
                if not isinstance(key, str):
                    raise TraceError(self.path, f"expected a string key at the top level, found {key!r}")
                self.expect(":", f"':' after top-level key {key[:40]!r}")
                if key == "traceEvents":
                    if self.skip_ws() != "[":
                        raise TraceError(self.path, f"'traceEvents' must be an array; expected {_EXPECTED}")
                    self._pos += 1
                    found = True
                    self.keys_before_events = list(self.header)
                    yield from self._array()
                else:
                    self.header[key], start, end = self.value(f"top-level key {key[:40]!r}")
                    header_chars += end - start + len(key)
                    if header_chars > MAX_HEADER_CHARS:
                        raise TraceError(
                            self.path,
                            f"the top-level values other than 'traceEvents' hold over {MAX_HEADER_CHARS >> 20} MiB "
                            "of JSON; a trace's header is a few KiB",
                        )
                if self.expect(",}", "',' or '}' after a top-level value") == "}":
                    break
        self.end()
        if not found:
            keys = sorted(self.header)
            shown = keys if len(keys) <= 10 else [*keys[:10], f"... {len(keys) - 10} more"]
            raise TraceError(self.path, f"no 'traceEvents' key (top-level keys: {shown}); expected {_EXPECTED}")

    def _array(self) -> Iterator[tuple[Any, Any, Any]]:
        if self.skip_ws() == "]":
            self._pos += 1
            return
        while True:
            event, start, end = self.value(f"event {self.events_read}")
            if not isinstance(event, dict):
                raise TraceError(
                    self.path, f"event {self.events_read} is {type(event).__name__}, not an object; expected {_EXPECTED}"
                )
            self.events_read += 1
            yield [event], [self._offset + start], [end - start]
            after = self._offset + end
            if self.expect(",]", "',' or ']' after an event") == "]":
                return
            if (
                self._batch is not None
                and self.skip_ws() == "{"
                and after >= self._offset
                and self._offset + self._pos >= self._plain_until
            ):
                if self._native is not None:
                    yield from self._native_batches()
                else:  # the separator this file writes between events ("},\n  {" from Kineto)
                    yield from self._batches("}" + self._buf[after - self._offset : self._pos] + "{")

    def _batches(self, separator: str) -> Iterator[tuple[list[Any], Any, Any]]:
        """Decode the events up to the last ``separator`` in the buffered bytes in one call, a
        buffer at a time; return, leaving the text buffer on an event, at the end of the array
        or when a batch cannot be taken that way (see the module docstring)."""
        assert self._batch is not None
        sep = separator.encode("ascii")
        gap = len(sep) - 2  # characters between one event's "}" and the next one's "{"
        np = self._arrays
        # To bytes: the rest of the text buffer, then the file's bytes read into one buffer
        # after a "[", so that a batch is decoded where it lies (its last separator's "," set
        # to "]"); what follows the batch moves to the front for the next read.
        rest = self._buf[self._pos :].encode("utf-8") + self._decoder.getstate()[0]
        self._decoder.reset()
        at = self._offset + self._pos  # character offset of buf[1]
        buf = bytearray(max(2 * self._chunk, len(rest) + self._chunk) + 2)
        view = memoryview(buf)
        buf[0] = 0x5B  # "["
        end = 1 + len(rest)
        buf[1:end] = rest
        try:
            while True:
                if not self._eof and end < len(buf):
                    end += self._read(into=view[end:])
                cut = buf.rfind(sep, 1, end)
                if cut < 0:
                    return
                after_brace = buf[cut + 1]  # the separator's "," or whitespace before it
                buf[cut + 1] = 0x5D  # "]"
                batch = view[1 : cut + 1]
                # The bytes are looked at before the decode, while the read has left them in the
                # CPU's cache (0.015 CPU s per 256 MiB). buf.isascii() looks at bytes of earlier
                # reads too: false now and then for ASCII.
                sizes, plain = _part_sizes(np, batch, sep), buf.isascii()
                try:
                    events = self._batch(view[: cut + 2])
                except (ValueError, RecursionError):  # msgspec.DecodeError is a ValueError
                    events = None
                spans = None if events is None else _spans(np, batch, sep, len(events), plain, sizes)
                buf[cut + 1] = after_brace
                if spans is None or events is None:
                    # A separator inside a string or a nested list, types the decoder does not
                    # take, or not UTF-8: read this batch one event at a time.
                    self._plain_until = at + cut
                    return
                offsets, lengths, chars = spans
                self.events_read += len(events)
                yield events, offsets + at if np is not None else [at + o for o in offsets], lengths
                del events  # freed before the next decode, which then reuses its memory
                at += chars + gap  # up to the next event's "{"
                start = cut + len(sep) - 1
                buf[1 : 1 + end - start] = bytes(view[start:end])
                end = 1 + end - start
        except BaseException:
            end = 1  # a failed read or an interrupt: nothing to hand back, the error stands
            raise
        finally:
            # Back to text, at the event that begins buf[1:end].
            self._offset, self._pos = at, 0
            self._buf = self._text(bytes(view[1:end])) if end > 1 else ""

    def _native_batches(self) -> Iterator[tuple[NativeBatch, Any, Any]]:
        """:meth:`_batches` by the compiled scanner: the buffered bytes from the cursor (an
        event's start) are scanned into columns, a buffer at a time, each event's type checked as
        the typed decoder checks it. The text buffer is handed back at an event: the array's last
        (its ``]`` read the standard way), one the scanner leaves to the standard decoder (which
        reads it or names its error; the rest of the buffer is read that way too, so that a file
        of such events is not scanned again event by event), one longer than the buffer, or one
        the file ends in."""
        scan, np = self._native.scan, self._arrays
        rest = self._buf[self._pos :].encode("utf-8") + self._decoder.getstate()[0]
        self._decoder.reset()
        at = self._offset + self._pos  # character offset of buf[0], an event's "{"
        buf = bytearray(max(2 * self._chunk, len(rest) + self._chunk))
        view = memoryview(buf)
        end = len(rest)
        buf[:end] = rest
        keep = 0  # where the bytes handed back to the text buffer begin
        try:
            while True:
                if not self._eof and end < len(buf):
                    end += self._read(into=view[end:])
                *columns, stop, stop_chars, status = scan(view[:end], at)
                batch = NativeBatch(np, columns, view)
                if batch.n:
                    self.events_read += batch.n
                    yield batch, batch.offsets, batch.lengths
                del batch
                at += stop_chars
                if status == _SCAN_SLOW:
                    self._plain_until = at + end - stop  # bytes bound the characters they hold
                if status != _SCAN_MORE or (stop == 0 and (self._eof or end == len(buf))):
                    keep = stop
                    return
                buf[: end - stop] = bytes(view[stop:end])
                end -= stop
        except BaseException:
            keep = end  # a failed read or an interrupt: nothing to hand back, the error stands
            raise
        finally:
            self._offset, self._pos = at, 0
            self._buf = self._text(bytes(view[keep:end])) if end > keep else ""

    def events(self) -> Iterator[dict[str, Any]]:
        """Yield each event as a dict."""
        for event, _, _ in self.raw_events():
            yield event


_SCAN_MORE, _SCAN_SLOW = 0, 2  # the scanner's status: the buffer ends in an event; one to read the standard way


class NativeBatch:
    """A buffer's events as the compiled scanner gives them: numpy columns ``offsets`` and
    ``lengths`` (where each event's text is, in characters of the file), ``ts``, ``dur`` (nan:
    absent), ``kind`` (the scanner's id of the event's ``(ph, cat, name, pid, tid)`` bytes) and
    ``corr`` (``args.correlation``); :meth:`events` decodes some whole. Valid while the reader
    holds the batch, until it reads on."""

    __slots__ = ("corr", "dur", "kind", "lengths", "n", "offsets", "sizes", "starts", "ts", "view")

    def __init__(self, np: Any, columns: list[bytearray], view: memoryview) -> None:
        dtypes = (np.int64, np.int32, np.int64, np.int32, np.float64, np.float64, np.int32, np.float64)
        self.offsets, self.lengths, self.starts, self.sizes, self.ts, self.dur, self.kind, self.corr = (
            np.frombuffer(column, dtype) for column, dtype in zip(columns, dtypes, strict=True)
        )
        self.n = len(self.ts)
        self.view = view

    def events(self, rows: list[int]) -> list[dict[str, Any]]:
        """Events ``rows`` whole, by the standard decoder (the scanner has checked their JSON):
        a trace's metadata and the few markers whose names are not held, never worth importing
        msgspec for (6 ms)."""
        view, starts, sizes = self.view, self.starts[rows].tolist(), self.sizes[rows].tolist()
        return [json.loads(bytes(view[s : s + n])) for s, n in zip(starts, sizes, strict=True)]


def _part_sizes(np: Any, batch: Any, sep: bytes) -> Any:
    """The length in bytes of each part of ``batch`` between occurrences of ``sep`` (every one:
    one inside a string splits too, and :func:`_spans` then refuses the batch), a numpy array
    where numpy is installed. StringZilla's SIMD search (the ``fast`` extra) splits in place, and
    the parts are only measured; else :meth:`bytes.split` splits a copy (0.05 against 0.39 CPU s
    per 256 MiB)."""
    sz = _stringzilla()
    parts = bytes(batch).split(sep) if sz is None else sz.Str(batch).split_iter(sep)
    return list(map(len, parts)) if np is None else np.fromiter(map(len, parts), np.int64)


def _spans(np: Any, batch: Any, sep: bytes, n: int, plain: bool, sizes: Any) -> tuple[Any, Any, int] | None:
    """Where each of the ``n`` events of ``batch`` (bytes, ASCII if ``plain``, events joined by
    ``sep``; ``sizes``: :func:`_part_sizes`) begins and how long it is, in characters, and the
    batch's length in characters: numpy arrays where numpy is installed. ``None`` when ``sep``
    does not occur exactly ``n - 1`` times or the batch is not UTF-8."""
    if len(sizes) != n:
        return None
    if not plain:
        try:
            text = codecs.decode(batch, "utf-8")
        except UnicodeDecodeError:
            return None
        # The separator is ASCII, so the text splits into the same parts, measured in characters.
        sizes = list(map(len, text.split(sep.decode("ascii"))))
        if np is not None:
            sizes = np.array(sizes, np.int64)
    # A part is an event less the "}" and "{" its separators hold (the first lacks only its "}",
    # the last only its "{"); the next event begins at the separator's "{".
    gap = len(sep) - 2
    if np is None:
        lengths = [size + 2 for size in sizes]
        lengths[0] -= 1
        lengths[-1] -= 1
        offsets = list(itertools.accumulate((length + gap for length in lengths[:-1]), initial=0))
        return offsets, lengths, offsets[-1] + lengths[-1]
    lengths = sizes + 2
    lengths[0] -= 1
    lengths[-1] -= 1
    offsets = np.zeros(n, np.int64)
    np.cumsum(lengths[:-1] + gap, out=offsets[1:])
    return offsets, lengths, int(offsets[-1] + lengths[-1])


def _record(event: dict[str, Any]) -> Record:
    args = event.get("args")
    if type(args) is not dict:
        args = {}
    return (event.get("ph"), event.get("cat"), event.get("name"), event.get("pid"), event.get("tid"), event.get("ts"),
            event.get("dur"), args.get("correlation"), args.get("name"))  # fmt: skip


@checked
def read_trace(path: str | Path, *, progress: Progress | None = None, fast: bool = True) -> TraceReader:
    """Open ``path`` (gzip is recognised by its magic bytes, whatever the suffix) for one pass;
    ``fast=False`` keeps to the standard library even where msgspec is installed."""
    return TraceReader(path, progress=progress, fast=fast)


@functools.cache
def _stringzilla() -> Any:
    """StringZilla (the ``fast`` extra) unless ``PROFWIN_TRACES_FAST`` is ``0``, else ``None``."""
    return fast_module("stringzilla")


@functools.cache
def fast_decoder() -> Callable[[Any], list[Any]] | None:
    """A msgspec decoder of event batches into :data:`Record` fields, when msgspec is importable
    (the ``fast`` extra), else ``None``. ``PROFWIN_TRACES_FAST=0`` turns it off (to compare)."""
    msgspec = fast_module("msgspec")
    if msgspec is None:
        return None
    # Only the fields the tools read: msgspec skips the rest without building it, which is
    # where the speed comes from.
    args = msgspec.defstruct("Args", [("correlation", Any, None), ("name", Any, None)], gc=False)
    fields = [(f, Any, None) for f in ("ph", "cat", "name", "pid", "tid", "ts", "dur")]
    event = msgspec.defstruct("Event", [*fields, ("args", args | None, None)], gc=False)
    decode: Callable[[Any], list[Any]] = msgspec.json.Decoder(list[event]).decode  # type: ignore[valid-type]
    return decode
