"""The fast path of :func:`profwin_traces.indexing.scan`: events as numpy columns, not one by one.

With the ``fast`` extra (msgspec and numpy) the reader decodes a buffer of events at a time into
typed structs (:func:`column_decoder`), the fields are pulled out with C-level ``map`` calls, and
everything the standard path does per event in the interpreter is done here per segment of
:data:`SEGMENT` events with numpy: thread, category and name lookups (dictionaries consulted once
per distinct value), byte placement, device work, launches, and self times.

Self times without a per-event stack: within one lane (a thread's operators, or its runtime
calls), complete events with a positive duration sorted by ``(start, -end)`` nest, so an event's
depth is the number of earlier events still open when it starts (``position - events ended by
then``, one ``searchsorted``), and its direct parent is the last earlier event one level up (a
second ``searchsorted``). Children's durations are summed into parents with ``bincount``. Events
still open at a segment's end (their end is past the lane's latest start) are carried into the
next segment with what their children have added so far. For events that nest — what torch
writes — the results are the standard path's (a property test checks it); where events overlap
without nesting, both are approximations and may differ.

Events of a few kinds stay per event in Python, as few as they are: metadata (``ph: M``), step
markers and other non-operator spans, and batches the typed decoder refuses (a ``ts`` written as
a string, ``args`` that is not an object), which the reader hands over as dicts.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise, repeat
from operator import attrgetter, itemgetter
from typing import Any

from profwin.plugin import StepMarker
from profwin_traces.native import compiled
from profwin_traces.reader import NativeBatch, fast_module, numpy_or_none
from profwin_traces.scan import (
    _LAUNCHES,
    MAX_NAME_CHARS,
    MAX_NAMES,
    OTHER_NAMES,
    TraceIndex,
    _Filler,
    _number,
    check_new_thread,
    kernel_kind,
)
from profwin_traces.stream import fast_installed

__all__ = ["SEGMENT", "column_decoder", "numpy_or_none"]

SEGMENT = 1 << 14
"""Events gathered before a vectorized pass; bounds the temporary arrays (a few MiB)."""
MAX_RAW_NAMES = 4 * MAX_NAMES
"""Distinct event names looked up by dictionary; past it new names share one entry (markers excepted)."""
MAX_RAW_NAME_CHARS = 16 << 20
"""Characters of the event names kept as dictionary keys, all together: a name is remembered (its
kind looked up once) only while it is at most :data:`~profwin_traces.scan.MAX_NAME_CHARS` long and
within this budget. Any other is looked up each time it comes and held by no table: an operator's
by its cut name (what its totals are kept under anyway), a step marker's or an annotation's under
one entry per marker (their events are read one by one, names and all). So names cost at most this
much memory, however many and long they are (262,000 annotations of 1 KiB held 270 MB here)."""
MAX_KINDS = 1 << 16
"""Distinct ``(ph, cat, name, pid, tid)`` kinds remembered; past it the table starts again."""
LANE_LOOP = 64
"""Lanes in a segment up to which nesting depths are found a lane at a time (see :func:`_ended`)."""

_PH = {"X": 0, "M": 1}
_TS_OF, _DUR_OF = map(attrgetter, ("ts", "dur"))
# One dictionary lookup per event gives its phase, category, name and thread together: a real
# trace has a few hundred kinds, and one 5-tuple lookup costs half of the four it replaces.
_KIND_OF = attrgetter("ph", "cat", "name", "pid", "tid")
_CORRELATION = attrgetter("args.correlation")
_ARG_NAME = attrgetter("args.name")


@functools.cache
def column_decoder() -> Callable[[Any], list[Any]] | None:
    """A msgspec decoder of event batches into typed structs, or ``None`` without the fast extra.

    The types are what torch writes; a batch with other types (``"ts": "12"`` or ``null``, a
    float or list ``pid``) fails to decode and the reader reads it the standard way, so nothing
    is lost, and every struct's ``(pid, tid)`` is hashable. A missing ``ts`` or
    ``dur`` is nan, so that each column is one ``numpy.fromiter``.

    msgspec is imported at the first batch decoded: with the compiled scanner, a trace may never
    need it (6 ms of every command's start). A msgspec that is installed but does not import
    refuses every batch, which the reader then reads the standard way."""
    if numpy_or_none() is None or not fast_installed("msgspec"):
        return None
    return _decode_columns


def _decode_columns(batch: Any) -> list[Any]:
    decode = _column_structs()
    if decode is None:
        raise ValueError("msgspec is installed but does not import")
    return decode(batch)


@functools.cache
def _column_structs() -> Callable[[Any], list[Any]] | None:
    msgspec = fast_module("msgspec")
    if msgspec is None:
        return None
    args = msgspec.defstruct("ColumnArgs", [("correlation", float | None, None), ("name", Any, None)], gc=False)
    event = msgspec.defstruct(
        "ColumnEvent",
        [
            ("ph", str | None, None), ("cat", str | None, None), ("name", str | None, None),
            ("pid", int | str | None, None), ("tid", int | str | None, None), ("ts", float, math.nan),
            ("dur", float, math.nan),
            ("args", args, msgspec.field(default_factory=args)),
        ],
        gc=False,
    )  # fmt: skip
    decode: Callable[[Any], list[Any]] = msgspec.json.Decoder(list[event]).decode  # type: ignore[valid-type]
    return decode


class _Args:
    __slots__ = ("correlation", "name")

    def __init__(self, correlation: Any, name: Any) -> None:
        self.correlation, self.name = correlation, name


class _Odd:
    """An unhashable ``pid`` or ``tid`` of a dict event (a list, say), hashable by identity so
    that the event's kind can be looked up; :func:`_raw` gives the value back to the checks that
    refuse it by name."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


def _raw(value: Any) -> Any:
    return value.value if type(value) is _Odd else value


class _Event:
    """A dict event (from the standard decoder) as the typed decoder would have made it."""

    __slots__ = ("args", "cat", "dur", "name", "ph", "pid", "tid", "ts")

    def __init__(self, event: dict[str, Any]) -> None:
        ph, cat, name = event.get("ph"), event.get("cat"), event.get("name")
        args = event.get("args")
        if type(args) is not dict:
            args = {}
        ts, dur, corr = event.get("ts"), event.get("dur"), args.get("correlation")
        if ts is not None:
            ts = _number(ts)
            ts = ts if ts is not None and math.isfinite(ts) else math.inf  # a bad ts: counted, then untimed
        if dur is not None:
            dur = _number(dur)
            dur = dur if dur is not None and math.isfinite(dur) else -1.0  # a bad dur: counted, then 0
        self.ph = ph if type(ph) is str else None
        self.cat = cat if type(cat) is str else None
        self.name = name if name is None or type(name) is str else str(name)
        pid, tid = event.get("pid"), event.get("tid")
        self.pid = pid if _hashable(pid) else _Odd(pid)
        self.tid = tid if _hashable(tid) else _Odd(tid)
        self.ts, self.dur = ts, dur
        self.args = _Args(None if corr is None else _number(corr), args.get("name"))


def _json_value(raw: bytes) -> Any:
    """A value the scanner left raw (:meth:`Scanner.keys` decodes the plain ones), as the standard
    decoder reads it; a string that is not UTF-8 raises as ``bytes.decode`` does."""
    if raw[:1] == b'"' and b"\\" not in raw:
        return raw[1:-1].decode("utf-8")
    return json.loads(raw)


def _pick(events: list[Any], rows: list[int]) -> tuple[Any, ...]:
    """``events[i]`` for each of ``rows`` (not empty), in one C call."""
    return itemgetter(*rows)(events) if len(rows) > 1 else (events[rows[0]],)


def _hashable(value: object) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class ColumnFiller(_Filler):
    """:class:`profwin_traces.scan._Filler`'s work, a segment of events at a time (see the module)."""

    def __init__(self, index: TraceIndex, markers: Sequence[StepMarker] | None) -> None:
        super().__init__(index, markers)
        np = self.np = numpy_or_none()
        self.thread_ids: dict[tuple[Any, Any], int] = {}
        self.thread_keys: list[tuple[Any, Any]] = []
        self.thread_counts = np.zeros(0, np.int64)
        self.cat_ids: dict[Any, int] = {}
        self.cat_flags = np.zeros((0, 4), bool)  # not an op, device work, runtime call, gpu_*
        self.raw_names: dict[Any, int] = {}  # names remembered (within MAX_RAW_NAME_CHARS) -> name_text id
        self.raw_chars = 0  # characters of the names in raw_names
        self.shared_names: dict[Any, int] = {}  # a cut name, or a marker, -> the id its uncounted names share
        self.name_text: list[str] = []
        self.name_marker: list[StepMarker | None] = []
        self.name_launch = np.zeros(0, bool)
        self.name_kind = np.zeros(0, np.int8)
        self.name_marks = np.zeros(0, bool)
        self.op_of = np.full(0, -1, np.int64)  # raw name id * 2 + is_kernel -> index.names id
        self.kind_ids: dict[tuple[Any, ...], int] = {}
        self.kind_keys: list[tuple[Any, ...]] = []
        self.kind_ph = np.zeros(0, np.int8)  # 0: X, 1: M, 2: another phase
        self.kind_cat = np.zeros(0, np.int64)  # cat_ids id
        self.kind_name = np.zeros(0, np.int64)  # raw_names id
        self.kind_thread = np.zeros(0, np.int64)  # thread_ids id; -1 until a timed event of the kind
        self.kind_kept = np.zeros(0, bool)  # its events read one by one later: metadata, markers, non-operators
        self.kind_whole = np.zeros(0, bool)  # kept, and decoded whole by the native path: metadata, names not held
        self.kind_linked = np.zeros(0, bool)  # its events' correlation ids are read: kernels, launch calls
        self.lane_last: dict[int, float] = {}  # last ts of a complete event per lane, file order
        self.carry: dict[str, Any] | None = None  # events still open after the last segment
        module = compiled()  # built on first use (profwin_traces.native), or None
        self.scanner: Any = None if module is None else module.Scanner()
        self.nest_kids: Any = None if module is None else module.nest_kids
        self.native_kind = np.zeros(0, np.int64)  # the scanner's kind id -> this filler's; -1: not yet
        self.base = 0  # events before the segment being read

    # -- input ---------------------------------------------------------------------------------

    def fill_columns(self, batches: Iterator[tuple[Any, Any, Any]]) -> None:
        """Consume the reader's ``(events, offsets, lengths)`` batches (structs or dicts)."""
        np = self.np
        kept: dict[int, Any] = {}
        spans: list[tuple[Any, Any]] = []
        columns: list[tuple[Any, ...]] = []
        n = chars = 0
        for batch, offsets, lengths in batches:
            if not n and len(self.kind_keys) > MAX_KINDS:  # a trace of ever new names: start the table again
                self._restart_kinds()
            if type(batch) is NativeBatch:
                columns.append(self._native_columns(batch))
                # Decoded whole: the metadata and the kept events whose kind lacks the name. The
                # kind of any other kept event holds all that timed_events reads of it.
                rows = np.flatnonzero(self.kind_whole[columns[-1][0]]).tolist()
                if rows:
                    kept.update(zip((r + n for r in rows), map(_Event, batch.events(rows)), strict=True))
                n += batch.n
            else:
                if type(batch[0]) is dict:
                    batch = [_Event(e) for e in batch]
                # All a segment needs of a batch is taken while its structs are in the CPU's cache,
                # and only the few read one by one later are kept: 0.07 CPU s per 256 MiB less than
                # the same passes over, and the freeing of, a whole segment of structs.
                columns.append(self._columns(batch))
                found = np.flatnonzero(self.kind_kept[columns[-1][0]])
                if len(found):
                    kept.update(zip((found + n).tolist(), _pick(batch, found.tolist()), strict=True))
                n += len(batch)
            spans.append((offsets, lengths))
            del batch  # not held while the reader decodes the next one (see _batches)
            if n >= SEGMENT:
                chars += self.segment(n, kept, spans, columns)
                kept, spans, columns, n = {}, [], [], 0
        chars += self.segment(n, kept, spans, columns)
        self.nest(None, final=True)
        index = self.index
        index.thread_events.update(
            {key: int(n) for key, n in zip(self.thread_keys, self.thread_counts.tolist(), strict=True) if n}
        )
        index.event_chars = chars

    # -- lookups, once per distinct value -------------------------------------------------------

    def _columns(self, events: list[Any]) -> tuple[Any, ...]:
        """The events' kind ids, ``ts``, ``dur`` and correlation ids (nan but for kernels and
        launch calls): one C-level pass each, no per-event Python."""
        np, n = self.np, len(events)
        kind = self._kinds(events)
        correlation = np.full(n, np.nan)
        linked = np.flatnonzero(self.kind_linked[kind]).tolist()
        if linked:  # None (no id) is nan
            correlation[linked] = np.array(list(map(_CORRELATION, _pick(events, linked))), np.float64)
        try:
            ts = np.fromiter(map(_TS_OF, events), np.float64, n)
        except TypeError:  # a missing ts (None): nan
            ts = np.array(list(map(_TS_OF, events)), np.float64)
        try:
            dur = np.fromiter(map(_DUR_OF, events), np.float64, n)
        except TypeError:  # a missing dur (None): nan
            dur = np.array(list(map(_DUR_OF, events)), np.float64)
        return kind, ts, dur, correlation

    def _native_columns(self, batch: NativeBatch) -> tuple[Any, ...]:
        """:meth:`_columns` for a :class:`NativeBatch`: the scanner's kinds mapped to this
        filler's, each scanner kind's bytes decoded once (and again after either table starts
        over). The scanner's table is emptied past :data:`MAX_KINDS` kinds or
        :data:`MAX_RAW_NAME_CHARS` bytes, once this batch no longer needs it."""
        np, scanner = self.np, self.scanner
        if len(self.native_kind) < scanner.kinds:
            self.native_kind = np.concatenate([self.native_kind, np.full(scanner.kinds - len(self.native_kind), -1, np.int64)])
        kind = self.native_kind[batch.kind]
        missing = np.flatnonzero(kind < 0)
        if len(missing):
            ids = sorted(set(batch.kind[missing].tolist()))  # not np.unique: its plain form imports numpy.ma (10 ms)
            keys, undecoded = scanner.keys(ids)  # decoded in C where plain (most): the rest by _json_value
            for i in undecoded:
                keys[i] = tuple(_json_value(v) if type(v) is bytes else v for v in keys[i])
            new = [k for k in dict.fromkeys(keys) if k not in self.kind_ids]
            fresh = self._new_kinds(new) if new else {}
            self.native_kind[ids] = [self.kind_ids.get(k, fresh.get(k, -1)) for k in keys]
            kind = self.native_kind[batch.kind]
        if scanner.kinds > MAX_KINDS or scanner.kind_bytes > MAX_RAW_NAME_CHARS:
            scanner.reset()
            self.native_kind = self.native_kind[:0]
        correlation = np.where(self.kind_linked[kind], batch.corr, np.nan)
        return kind, batch.ts, batch.dur, correlation

    def _restart_kinds(self) -> None:
        """Forget the kinds (their ids are per segment; the table stays bounded)."""
        self.kind_ids, self.kind_keys = {}, []
        self.native_kind = self.native_kind[:0]
        tables = (
            self.kind_ph,
            self.kind_cat,
            self.kind_name,
            self.kind_thread,
            self.kind_kept,
            self.kind_whole,
            self.kind_linked,
        )
        (self.kind_ph, self.kind_cat, self.kind_name, self.kind_thread, self.kind_kept, self.kind_whole, self.kind_linked) = (
            a[:0] for a in tables
        )

    def _kinds(self, events: list[Any]) -> Any:
        """Each event's kind id; kinds not seen before registered first, once each."""
        np, ids = self.np, self.kind_ids
        found = np.fromiter(map(ids.get, map(_KIND_OF, events), repeat(-1)), np.int64, len(events))
        missing = np.flatnonzero(found < 0).tolist()
        if not missing:
            return found
        keys = list(map(_KIND_OF, _pick(events, missing)))
        fresh = self._new_kinds(list(dict.fromkeys(keys)))
        found[missing] = np.fromiter(map(fresh.__getitem__, keys), np.int64, len(keys))
        return found

    def _new_kinds(self, new: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], int]:
        """Register the kinds ``new`` and return their ids; a kind is remembered (looked up by
        :meth:`_kinds` from then on) only when its name is (:meth:`_new_names`)."""
        np = self.np
        cats = [c for c in dict.fromkeys(k[1] for k in new) if c not in self.cat_ids]
        if cats:
            self._new_categories(cats)
        names = {n: self.raw_names.get(n, -1) for n in dict.fromkeys(k[2] for k in new)}
        unknown = [n for n, i in names.items() if i < 0]
        if unknown:
            names.update(self._new_names(unknown))
        fresh = {}
        held = []
        for key in new:
            fresh[key] = len(self.kind_keys)
            held.append(key[2] in self.raw_names)
            if held[-1]:
                self.kind_ids[key] = fresh[key]
                self.kind_keys.append(key)
            else:  # its name held by no table: the kind keeps its thread only
                self.kind_keys.append((key[0], key[1], None, key[3], key[4]))
        ph = np.array([_PH.get(k[0], 2) for k in new], np.int8)
        cat = np.array([self.cat_ids[k[1]] for k in new], np.int64)
        name = np.array([names[k[2]] for k in new], np.int64)
        not_op, is_kernel, is_runtime, is_gpu = self.cat_flags[cat].T
        complete = ph == 0
        # What timed_events and the metadata read of a kind's events, decided once per kind.
        kept = (ph == 1) | (complete & (not_op | (self.name_marks[name] & ~is_gpu)))
        linked = complete & (is_kernel | (is_runtime & self.name_launch[name]))
        self.kind_ph = np.concatenate([self.kind_ph, ph])
        self.kind_cat = np.concatenate([self.kind_cat, cat])
        self.kind_name = np.concatenate([self.kind_name, name])
        self.kind_thread = np.concatenate([self.kind_thread, np.full(len(new), -1, np.int64)])
        self.kind_kept = np.concatenate([self.kind_kept, kept])
        self.kind_whole = np.concatenate([self.kind_whole, kept & ((ph == 1) | ~np.array(held, bool))])
        self.kind_linked = np.concatenate([self.kind_linked, linked])
        return fresh

    def _threads(self, kind: Any, timed: Any) -> Any:
        """Each timed event's thread id (-1 for untimed events); threads new to a kind found at
        the kind's first timed event, in file order."""
        np = self.np
        thread = self.kind_thread.take(kind)
        missing = np.flatnonzero((thread < 0) & timed)
        if len(missing):
            _, first = np.unique(kind[missing], return_index=True)
            for row in missing[np.sort(first)].tolist():
                self.kind_thread[kind[row]] = self._thread(self.kind_keys[kind[row]][3:], row)
            thread = self.kind_thread.take(kind)
        return np.where(timed, thread, -1)

    def _thread(self, key: tuple[Any, ...], row: int) -> int:
        """The id of the thread ``key``, first seen at segment row ``row``: checked and added if new."""
        found = self.thread_ids.get(key)
        if found is not None:
            return found
        self.index.events = self.base + row  # so that a refusal names the thread's first event
        check_new_thread(_raw(key[0]), _raw(key[1]), len(self.thread_ids), self.index)
        self.thread_ids[key] = found = len(self.thread_ids)
        self.thread_keys.append(key)
        self.thread_counts = self.np.append(self.thread_counts, 0)
        return found

    def _new_categories(self, new: list[Any]) -> None:
        rows = []
        for cat in new:
            text = cat if type(cat) is str else ""
            self.cat_ids[cat] = len(self.cat_ids)
            rows.append((*self.category(text), text.startswith("gpu_")))
        self.cat_flags = self.np.concatenate([self.cat_flags, self.np.array(rows, bool).reshape(-1, 4)])

    def _new_names(self, new: list[Any]) -> dict[Any, int]:
        """The name ids of names not seen before (or not remembered): a name at most
        :data:`MAX_NAME_CHARS` long is remembered while the names remembered hold at most
        :data:`MAX_RAW_NAME_CHARS` characters (and :data:`MAX_RAW_NAMES` names, markers excepted);
        any other shares an entry no table keys by its whole text (see :data:`MAX_RAW_NAME_CHARS`)."""
        ids = self.raw_names
        found: dict[Any, int] = {}
        launch, marks = [], []
        for name in new:
            text = name if type(name) is str else str(name)
            marker = self.matcher.match(text, None)
            if len(text) > MAX_NAME_CHARS or self.raw_chars + len(text) > MAX_RAW_NAME_CHARS:
                # Not remembered: a marker's events are read one by one, names and all, so its
                # entry needs no text; an operator's totals are kept under its cut name anyway.
                shared: Any = (
                    marker if marker is not None else text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "…"
                )
                if self.raw_chars + MAX_NAME_CHARS > MAX_RAW_NAME_CHARS and marker is None:
                    shared = OTHER_NAMES
                if shared in self.shared_names:
                    found[name] = self.shared_names[shared]
                    continue
                self.raw_chars += MAX_NAME_CHARS
                found[name] = self.shared_names[shared] = len(self.name_text)
                text = marker.producer if marker is not None else shared
            else:
                if len(self.name_text) >= MAX_RAW_NAMES and marker is None:  # one entry for the rest
                    if OTHER_NAMES in self.shared_names:
                        found[name] = self.shared_names[OTHER_NAMES]
                        continue
                    text = OTHER_NAMES
                    found[name] = self.shared_names[OTHER_NAMES] = len(self.name_text)
                else:
                    self.raw_chars += len(text)
                    found[name] = ids[name] = len(self.name_text)
            self.name_text.append(text)
            self.name_marker.append(marker)
            launch.append(text in _LAUNCHES)
            marks.append(marker is not None)
        if not launch:
            return found
        np = self.np
        self.name_launch = np.concatenate([self.name_launch, np.array(launch, bool)])
        self.name_kind = np.concatenate([self.name_kind, np.full(len(launch), -1, np.int8)])  # see _kernel_kinds
        self.name_marks = np.concatenate([self.name_marks, np.array(marks, bool)])
        grow = 2 * len(self.name_text) - len(self.op_of)
        if grow > 0:
            self.op_of = np.concatenate([self.op_of, np.full(grow, -1, np.int64)])
        return found

    # -- one segment -----------------------------------------------------------------------------

    def segment(self, n: int, kept: dict[int, Any], spans: list[tuple[Any, Any]], columns: list[tuple[Any, ...]]) -> int:
        """Index one segment of ``n`` events (their batches' :meth:`_columns`; ``kept``: the events
        read one by one, by row); return the characters of their JSON text."""
        np, index = self.np, self.index
        if not n:
            return 0
        offsets = np.concatenate([np.asarray(o, np.int64) for o, _ in spans])
        lengths = np.concatenate([np.asarray(n, np.int32) for _, n in spans])
        self.base = index.events
        kind, ts, dur, correlation = (np.concatenate(c) for c in zip(*columns, strict=True))
        code = self.kind_ph[kind]
        index.bad_times += int(np.isinf(ts).sum())
        metadata = code == 1
        timed = ~metadata & np.isfinite(ts)
        for i in np.flatnonzero(metadata).tolist():
            index.events = self.base + i
            event = kept[i]
            self.metadata(event.name, _raw(event.pid), _raw(event.tid), _ARG_NAME(event))
        start = np.where(timed, ts, -np.inf)
        end = np.where(timed, ts, np.inf)
        rows = np.flatnonzero(timed)
        if len(rows):
            self.timed_events(rows, kind, code, ts, dur, correlation, end, kept)
        index.events = self.base + n
        index.placed.extend(offsets, lengths, start, end)
        return int(lengths.sum())

    def timed_events(
        self, rows: Any, kind: Any, code: Any, ts: Any, dur: Any, correlation: Any, end: Any, kept: dict[int, Any]
    ) -> None:
        np, index = self.np, self.index
        timed = np.zeros(len(code), bool)
        timed[rows] = True
        thread = self._threads(kind, timed)
        self.thread_counts += np.bincount(thread[rows], minlength=len(self.thread_counts))
        x_rows = rows[code[rows] == 0]
        if not len(x_rows):
            return
        thread = thread[x_rows]
        start = ts[x_rows]
        dur = dur[x_rows]
        dur[np.isnan(dur)] = 0.0  # no dur: an instant
        bad = ~((dur >= 0.0) & (dur < np.inf))
        index.bad_times += int(bad.sum())
        dur[bad] = 0.0
        stop = start + dur
        end[x_rows] = stop
        x_kind = kind[x_rows]
        cats = self.kind_cat[x_kind]
        flags = self.cat_flags.take(cats, axis=0)  # 10 times faster than cat_flags[cats] on rows of a 2-d array
        is_kernel, is_runtime, is_gpu = flags[:, 1], flags[:, 2], flags[:, 3]
        names = self.kind_name[x_kind]
        # The kind's flags, decided once per kind by _new_kinds: for complete events, the ones kept
        # are the specials (markers, non-operators), the linked ones the kernels and launch calls.
        special = self.kind_kept[x_kind]
        linked = self.kind_linked[x_kind]
        op = np.full(len(x_rows), -1, np.int64)
        plain = ~special
        if plain.any():
            key = names[plain] * 2 + is_kernel[plain]
            ids = self.op_of[key]
            for k in sorted(set(key[ids < 0].tolist())):  # not np.unique: its plain form imports numpy.ma (10 ms)
                self.op_of[k] = self.name_id(self.name_text[k >> 1], bool(k & 1))
            op[plain] = self.op_of[key]
        if special.any():
            texts, keys, markers, index, special_event = (
                self.name_text,
                self.kind_keys,
                self.name_marker,
                self.index,
                self.special,
            )
            at = np.flatnonzero(special)
            # Python values for the loop: a numpy scalar costs a conversion at every use.
            for row, name_id, kind_id, gpu, ts, until in zip(
                x_rows[at].tolist(), names[at].tolist(), x_kind[at].tolist(), is_gpu[at].tolist(), start[at].tolist(),
                stop[at].tolist(), strict=True,
            ):  # fmt: skip
                event = kept.get(row)
                if event is None:  # the native path's: (ph, cat, name, pid, tid) as decoded
                    _, cat, name, pid, _ = keys[kind_id]
                else:
                    cat, name, pid = event.cat, event.name, event.pid
                index.events = self.base + row
                special_event(
                    _raw(pid), ts, until, name if type(name) is str else texts[name_id], cat if type(cat) is str else "",
                    None if gpu else markers[name_id],
                )  # fmt: skip
        kernel = plain & is_kernel
        if kernel.any():
            index.device.extend(start[kernel], stop[kernel], correlation[x_rows[kernel]], self._kernel_kinds(names[kernel]))
        launch = plain & ~is_kernel & linked
        if launch.any():
            l_rows = x_rows[launch]
            l_corr = correlation[l_rows]
            ok = ~np.isnan(l_corr)
            index.launches.extend(l_corr[ok], start[launch][ok], stop[launch][ok])
        lane = thread * 2 + is_runtime
        self.count_unordered(lane, start)
        self.nest({"lane": lane, "ts": start, "end": stop, "dur": dur, "op": op}, final=False)

    def _kernel_kinds(self, names: Any) -> Any:
        """Each device event's kind of work (:func:`kernel_kind`), by its name id: worked out the
        first time a name is device work, not for every new name (a step marker's, say)."""
        kinds = self.name_kind[names]
        if (kinds < 0).any():
            for name in set(names[kinds < 0].tolist()):
                self.name_kind[name] = kernel_kind(self.name_text[name])
            kinds = self.name_kind[names]
        return kinds

    def count_unordered(self, lane: Any, start: Any) -> None:
        """Complete events earlier than the one before them on their lane, in file order."""
        np = self.np
        order = np.argsort(lane, kind="stable")
        lanes, starts = lane[order], start[order]
        first = np.ones(len(lanes), bool)
        first[1:] = lanes[1:] != lanes[:-1]
        back = np.zeros(len(lanes), bool)
        back[1:] = (starts[1:] < starts[:-1]) & ~first[1:]
        unordered = int(back.sum())
        last = self.lane_last
        for i in np.flatnonzero(first).tolist():
            key = int(lanes[i])
            if key in last and starts[i] < last[key]:
                unordered += 1
        ends = np.flatnonzero(np.append(first[1:], True))
        for i in ends.tolist():
            last[int(lanes[i])] = float(starts[i])
        self.index.unordered += unordered

    # -- self times ----------------------------------------------------------------------------

    def nest(self, new: dict[str, Any] | None, *, final: bool) -> None:
        """Add ``new`` complete events to the open ones; emit those no later event can nest in."""
        np = self.np
        carry = self.carry
        if new is None and not final:
            return
        parts = [p for p in (carry, new) if p is not None and len(p["ts"])]
        if not parts:
            self.carry = None
            return
        n_new = len(new["ts"]) if new is not None else 0
        lane = np.concatenate([p["lane"] for p in parts])
        ts = np.concatenate([p["ts"] for p in parts])
        end = np.concatenate([p["end"] for p in parts])
        dur = np.concatenate([p["dur"] for p in parts])
        op = np.concatenate([p["op"] for p in parts])
        kids = np.concatenate([carry["kids"] if carry is not None else np.zeros(0), np.zeros(n_new)])
        fresh = np.concatenate([np.zeros(len(ts) - n_new, bool), np.ones(n_new, bool)])
        p_idx = np.flatnonzero(dur > 0.0)
        if len(p_idx):
            order = p_idx[_nest_order(np, lane[p_idx], ts[p_idx], end[p_idx])]
            if self.nest_kids is not None:  # the same sums, in the same order, compiled (_scan.c's nest_kids)
                columns = (lane[order], ts[order], end[order], dur[order], fresh[order])
                kids[order] += np.frombuffer(self.nest_kids(*columns), np.float64)
            else:
                parent, valid = _parents(np, lane[order], ts[order], end[order])
                valid &= fresh[order]
                if valid.any():
                    kids[order] += np.bincount(parent[valid], weights=dur[order][valid], minlength=len(order))
        if final:
            done = np.ones(len(ts), bool)
        else:
            latest = np.full(int(lane.max()) + 1, -np.inf)  # each lane's latest start: none can nest later
            np.maximum.at(latest, lane, ts)
            done = end <= latest[lane]
        emit = done & (op >= 0)
        if emit.any():
            own = dur[emit] - kids[emit]
            self.index.timed.extend(ts[emit], np.where(own > 0.0, own, 0.0), op[emit].astype(np.int32), dur[emit])
        stay = ~done
        self.carry = (
            {"lane": lane[stay], "ts": ts[stay], "end": end[stay], "dur": dur[stay], "op": op[stay],
             "kids": kids[stay]}
            if stay.any() else None
        )  # fmt: skip


def _nest_order(np: Any, lane: Any, ts: Any, end: Any) -> Any:
    """The order of events by ``(lane, ts, -end)``, stable: the order they nest in. Two stable
    sorts (which run in linear time on what torch writes: a lane's events in time order) and a
    third only over the runs of equal ``(lane, ts)``, for an outer event written after its first
    child (a full ``lexsort`` is 20 times slower on ordered events)."""
    order = np.argsort(ts, kind="stable")
    order = order[np.argsort(lane[order], kind="stable")]
    o_lane, o_ts = lane[order], ts[order]
    tie = (o_ts[1:] == o_ts[:-1]) & (o_lane[1:] == o_lane[:-1])
    if tie.any():
        tied = np.zeros(len(order), bool)
        tied[1:] = tie
        tied[:-1] |= tie
        rows = np.flatnonzero(tied)
        run = np.cumsum(np.concatenate([[True], ~tie]))[rows]  # one id per run of equal (lane, ts)
        order[rows] = order[rows][np.lexsort((-end[order[rows]], run))]
    return order


def _ended(np: Any, lane: Any, ts: Any, end: Any, lanes: Any) -> Any:
    """For events in nesting order whose lanes begin at the positions ``lanes``: the events ended
    by each one's start on its lane, and every event of the lanes before it. A lane at a time
    where there are few (the times compare as they are); else all at once, on exact ranks of the
    times (a lane's offset plus a rank: sums of floats would round)."""
    n = len(ts)
    if len(lanes) <= LANE_LOOP:
        ended = np.empty(n, np.int64)
        bounds = [*lanes.tolist(), n]
        for lo, hi in pairwise(bounds):
            ended[lo:hi] = lo + np.searchsorted(np.sort(end[lo:hi], kind="stable"), ts[lo:hi], "right")
        return ended
    both = np.concatenate([ts, end])
    by_time = np.argsort(both, kind="stable")
    step = np.ones(2 * n, np.int64)
    ordered = both[by_time]
    step[1:] = ordered[1:] != ordered[:-1]
    rank = np.empty(2 * n, np.int64)
    rank[by_time] = np.cumsum(step)  # equal times, equal ranks
    span = int(rank.max()) + 1
    key_s = lane * span + rank[:n]  # sorted: lanes in order, starts in order within a lane
    key_e = np.sort(lane * span + rank[n:], kind="stable")
    return np.searchsorted(key_e, key_s, "right")


def _parents(np: Any, lane: Any, ts: Any, end: Any) -> tuple[Any, Any]:
    """For events in nesting order (:func:`_nest_order`): each one's direct parent (a position
    in that order) and whether it has one. An event's depth is the events before it on its lane
    less those ended by its start; its parent is the last earlier event one level up. Every
    search here looks up sorted keys, which numpy does in one sweep."""
    n = len(ts)
    pos = np.arange(n, dtype=np.int64)
    first = np.ones(n, bool)
    first[1:] = lane[1:] != lane[:-1]
    lane_first = np.maximum.accumulate(np.where(first, pos, 0))
    depth = pos - _ended(np, lane, ts, end, np.flatnonzero(first))
    by_depth = np.argsort(depth.astype(np.int16) if n < 1 << 15 else depth, kind="stable")  # int16: a radix sort
    keyd = depth[by_depth] * n + by_depth  # sorted: by depth, then position
    at = np.empty(n, np.int64)
    at[by_depth] = np.searchsorted(keyd, keyd - n, "left") - 1  # the last one a level up, before each
    up = (depth - 1) * n
    found = np.where(at >= 0, keyd[np.maximum(at, 0)], -1)
    parent = found - up
    valid = (depth > 0) & (at >= 0) & (found >= up) & (parent >= lane_first)
    parent = np.where(valid, parent, 0)
    valid &= end[parent] >= end
    return parent, valid


# -- the second half of summarize: totals over the index's tables, in numpy ---------------------


def _frames(table: Any, np: Any, dtypes: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
    """The table's chunks as numpy arrays (views of its typed arrays, no copies)."""
    for chunk in table.chunks():
        yield tuple(np.frombuffer(column, dtype) for column, dtype in zip(chunk, dtypes, strict=True))


def op_totals(index: TraceIndex, t0: float, t1: float) -> tuple[list[int], list[float], list[float]]:
    """Calls, self time and total (inclusive) time per name id over complete events starting in ``[t0, t1)``."""
    np = numpy_or_none()
    counts = np.zeros(len(index.names), np.int64)
    selfs = np.zeros(len(index.names), np.float64)
    totals = np.zeros(len(index.names), np.float64)
    for ts, own, name, dur in _frames(index.timed, np, (np.float64, np.float64, np.int32, np.float64)):
        inside = (ts >= t0) & (ts < t1)
        counts += np.bincount(name[inside], minlength=len(counts))
        selfs += np.bincount(name[inside], weights=own[inside], minlength=len(selfs))
        totals += np.bincount(name[inside], weights=dur[inside], minlength=len(totals))
    return counts.tolist(), selfs.tolist(), totals.tolist()


def bytes_per_step(index: TraceIndex, starts: Sequence[float], ends: Sequence[float]) -> tuple[list[int], list[int], int]:
    """Bytes and events starting inside each step (steps sorted by start), and bytes outside all:
    an event belongs to the last step starting at or before it, if it starts before that one ends."""
    np = numpy_or_none()
    step_start, step_end = np.asarray(starts, np.float64), np.asarray(ends, np.float64)
    step_bytes = np.zeros(len(starts), np.int64)
    step_events = np.zeros(len(starts), np.int64)
    outside = 0
    for _, length, ts, _ in _frames(index.placed, np, (np.int64, np.int32, np.float64, np.float64)):
        i = np.searchsorted(step_start, ts, "right") - 1
        inside = (i >= 0) & (ts < step_end[np.maximum(i, 0)])
        step_bytes += np.bincount(i[inside], weights=length[inside], minlength=len(starts)).astype(np.int64)
        step_events += np.bincount(i[inside], minlength=len(starts))
        outside += int(length[~inside].sum())
    return step_bytes.tolist(), step_events.tolist(), outside


def kept_spans(index: TraceIndex, t0: float, t1: float) -> Iterator[tuple[int, int]]:
    """``(offset, length)`` of each event overlapping ``[t0, t1)``, in file order (see trim)."""
    np = numpy_or_none()
    for offset, length, start, end in _frames(index.placed, np, (np.int64, np.int32, np.float64, np.float64)):
        keep = (start < t1) & ((end > t0) | (start >= t0))
        yield from zip(offset[keep].tolist(), length[keep].tolist(), strict=True)


def device_totals(
    index: TraceIndex, step_starts: Sequence[float], step_ends: Sequence[float], t0: float, t1: float, max_launches: int
) -> tuple[Any, ...] | None:
    """Per step (sorted by start): work items, busy, span, idle, time by kind, matched launches,
    delay mean and max (``None`` without launches), rounded as a ``DeviceStat`` holds them; and
    for all of them: work items, busy, span, time by kind, matched launches, delay sum and max —
    :func:`profwin_traces.device.device_stats`'s rules."""
    np = numpy_or_none()
    launch = [np.concatenate(c) if c else np.zeros(0) for c in zip(*_frames(index.launches, np, [np.float64] * 3), strict=True)]
    if not launch:
        launch = [np.zeros(0)] * 3
    corr, l_start, l_end = launch
    window = np.flatnonzero((l_start >= t0) & (l_start < t1))[:max_launches]
    corr, l_start, l_end = corr[window], l_start[window], l_end[window]
    # A correlation id seen twice: the later call wins, as a dict would keep it.
    last = len(corr) - 1 - np.unique(corr[::-1], return_index=True)[1]
    corr, l_start, l_end = corr[last], l_start[last], l_end[last]
    del launch, window, last  # the whole trace's launches: not kept past their window (peak RSS)
    work = [np.concatenate(c) for c in zip(*_frames(index.device, np, [np.float64] * 3 + [np.int8]), strict=True)]
    start, end, w_corr, kind = work
    at = np.clip(np.searchsorted(corr, w_corr), 0, max(len(corr) - 1, 0))
    matched = (len(corr) > 0) & ~np.isnan(w_corr)
    if len(corr):
        matched &= corr[at] == w_corr
    anchor = np.where(matched, l_start[at] if len(corr) else start, start)
    s_start, s_end = np.asarray(step_starts, np.float64), np.asarray(step_ends, np.float64)
    step = np.searchsorted(s_start, anchor, "right") - 1
    valid = (step >= 0) & (anchor < s_end[np.maximum(step, 0)])
    if not valid.any():
        return None
    n = len(s_start)
    start, end, kind, step, matched = start[valid], end[valid], kind[valid], step[valid], matched[valid]
    delay = np.where(matched, np.maximum(start - (l_end[at[valid]] if len(corr) else start), 0.0), 0.0)
    del work, w_corr, at, anchor, valid  # the whole trace's device work, before the unions' temporaries
    by_kind = np.bincount(step * 4 + kind, weights=end - start, minlength=4 * n).reshape(n, 4)
    launches = np.bincount(step[matched], minlength=n)
    delay_sum = np.bincount(step[matched], weights=delay[matched], minlength=n)
    delay_max = np.zeros(n)
    np.maximum.at(delay_max, step[matched], delay[matched])
    work_n = np.bincount(step, minlength=n)
    busy, span = _union(np, start, end, step, n)
    total_busy, total_span = _union(np, start, end, np.zeros(len(step), np.int64), 1)
    total = (
        len(step), float(total_busy[0]), float(total_span[0]), by_kind.sum(axis=0).tolist(), int(matched.sum()),
        float(delay[matched].sum()), float(delay[matched].max()) if matched.any() else 0.0,
    )  # fmt: skip
    kinds_us = rounded(np, by_kind.reshape(-1))
    mean_us = rounded(np, delay_sum / np.maximum(launches, 1))
    rows = [
        (work, busy_us, span_us, idle_us, kinds_us[4 * i : 4 * i + 4], calls, mean if calls else None, most if calls else None)
        for i, (work, busy_us, span_us, idle_us, calls, mean, most) in enumerate(
            zip(work_n.tolist(), rounded(np, busy), rounded(np, span), rounded(np, span - busy), launches.tolist(),
                mean_us, rounded(np, delay_max), strict=True)
        )
    ]  # fmt: skip
    return rows, total


def rounded(np: Any, values: Any) -> list[float]:
    """``[round(v, 3) for v in values]`` (a float64 array), bit for bit, in one numpy pass for all
    but the few values Python must round: ``round`` rounds a float's exact binary value half to
    even, and so does ``rint(v * 1000)`` wherever the product's own rounding cannot have crossed a
    tie (it lies more than two units in the last place from one); ``k / 1000`` is then the float
    nearest ``k`` thousandths, as ``round`` returns. 8 of the 10 ``round`` calls per step of a
    device summary (0.02 CPU s on a trace of 6,555 steps)."""
    with np.errstate(over="ignore", invalid="ignore"):  # past 2**52 thousandths, inf and nan: Python's
        scaled = values * 1000.0
        out: list[float] = (np.rint(scaled) / 1000.0).tolist()
        doubt = ~(np.abs(scaled - np.floor(scaled) - 0.5) > 2.0 * np.spacing(np.abs(scaled))) | ~(np.abs(scaled) < 2.0**52)
    for i in np.flatnonzero(doubt).tolist():
        out[i] = round(float(values[i]), 3)
    return out


def _union(np: Any, start: Any, end: Any, group: Any, n: int) -> tuple[Any, Any]:
    """Per group: the length of the union of its intervals, and first start to last end."""
    order = np.lexsort((start, group))
    g, s, e = group[order], start[order], end[order]
    first = np.ones(len(g), bool)
    first[1:] = g[1:] != g[:-1]
    # The furthest end before each interval: over all groups, which is the group's own wherever
    # each group starts after the earlier ones end (steps in time order, and one group always).
    prev = np.full(len(e), -np.inf)
    prev[1:] = np.maximum.accumulate(e)[:-1]
    if not (prev[first] <= s[first]).all():  # within the group, by exact ranks so groups do not mix
        times, rank = np.unique(e, return_inverse=True)
        reach = np.maximum.accumulate(g * (len(times) + 1) + rank.reshape(-1) + 1)
        prev_rank = np.empty(len(g), np.int64)
        prev_rank[0] = 0
        prev_rank[1:] = reach[:-1] - g[1:] * (len(times) + 1)
        prev_rank[first] = 0
        prev = np.where(prev_rank > 0, times[np.maximum(prev_rank - 1, 0)], -np.inf)
    cover = np.maximum(e - np.maximum(s, prev), 0.0)
    busy = np.bincount(g, weights=cover, minlength=n)
    lo = np.full(n, np.inf)
    hi = np.full(n, -np.inf)
    np.minimum.at(lo, g, s)
    np.maximum.at(hi, g, e)
    return busy, np.where(np.isfinite(lo), hi - lo, 0.0)
