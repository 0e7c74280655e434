"""Reading a CPU memory timeline: one streaming pass, every value checked, in bounded memory.

A timeline (written by :mod:`profwin_memory.cpu_timeline`) is a JSON object whose bulk is two
objects of equally long columns of numbers, ``events`` (a row per allocation or free) and
``per_step``, and the names ``events.op`` indexes, ``ops``. :func:`load_timeline` reads it with
profwin-traces' :class:`~profwin_traces.JsonStream`, whose bounds are the reader's: at most
:data:`MAX_TIMELINE_BYTES` decompressed (a gzip bomb stops there), one value at most 16 MiB of
JSON, whitespace dropped as it is read. A column is decoded a buffer at a time and checked as it
is decoded (by msgspec, in the decode itself, where the ``fast`` extra is installed), and only
kept when the caller asks for the columns; where it is not kept, past the first 8 MiB its text is
checked and counted by numpy without making a number of it (:mod:`profwin_memory.column_text`).
The other values, a few KiB, are checked whole.

Every number has a rule (:data:`EVENT_COLUMNS`, :data:`PER_STEP_COLUMNS`, :data:`TOTALS`): an
integer or a finite number, at least 0 where a negative means nothing, a step within the
timeline's ``steps``, an op index within ``ops``. A value that breaks its rule, a column longer
than its neighbours, a missing key: each is a :class:`TimelineError` naming the place
(``events.bytes[1234]``, ``totals.alloc_bytes``), the value as the file holds it and the rule.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from profwin.plugin import ConfigError, ProfwinError, Window, checked
from profwin_memory.column_text import ColumnCounter
from profwin_memory.cpu_timeline import TIMELINE_FORMAT
from profwin_memory.naming import stat_input
from profwin_traces import JsonStream, fast_module

__all__ = [
    "EVENT_COLUMNS",
    "MAX_TIMELINE_BYTES",
    "PER_STEP_COLUMNS",
    "TOTALS",
    "Rule",
    "TimelineError",
    "load_timeline",
]

MAX_TIMELINE_BYTES = 256 << 20
"""Largest CPU memory timeline read, decompressed (256 MiB; profwin writes a few MB per window)."""
MAX_HEADER_CHARS = 1 << 20
"""The values other than ``events``, ``per_step`` and ``ops``, together, as JSON text (a few KiB in a real file)."""
VERSION = 2
"""The newest timeline version this reader knows (what :mod:`profwin_memory.cpu_timeline` writes).
Version 1 is read too: timelines written before the version moved (the shape grew without it:
``totals.frees_of_older_blocks`` came later, so a version 1 file may lack it, and any total but
the bytes, counts and peaks of the first writer, :data:`V1_OPTIONAL_TOTALS`, and the per-step
``free_count``); what it lacks is ``null``. Version 2 has every value."""
V1_OPTIONAL_TOTALS = ("free_count", "outside_steps", "frees_of_older_blocks")
"""Totals a version 1 timeline may lack (read as ``null``)."""
V1_OPTIONAL_COLUMNS = {"per_step": ("free_count",), "events": ()}
"""Columns a version 1 timeline may lack."""

_EXPECTED = f"a profwin memory timeline: a JSON object with format {TIMELINE_FORMAT!r}"


class TimelineError(ProfwinError, ValueError):
    """A memory timeline cannot be used: unreadable, past a bound, or a value breaking its rule.
    ``reason`` names the place in the file (``events.bytes[12]``), the value and the rule."""

    def __init__(self, path: str | Path, message: str) -> None:
        self.path = str(path)
        self.reason = message
        super().__init__(f"{path}: {message}")


@frozen
class Rule:
    """What one number of a timeline must be: an integer (else any finite number), at least ``low``
    (``None``: any sign). A step's and an op index's upper bound come from the file itself."""

    integer: bool = True
    low: int | None = 0


EVENT_COLUMNS = {"t_us": Rule(integer=False), "step": Rule(), "bytes": Rule(low=None), "live_bytes": Rule(), "op": Rule()}
"""``events``: time in µs from the first step's start, step, bytes (a free's are negative),
live bytes after the event, index into ``ops``."""
PER_STEP_COLUMNS = {
    name: Rule()
    for name in ("step", "alloc_bytes", "alloc_count", "free_bytes", "free_count", "peak_live_bytes", "end_live_bytes")
}
"""``per_step``: one row per step of ``steps``."""
TOTALS = {
    name: Rule()
    for name in (
        "alloc_bytes",
        "alloc_count",
        "free_bytes",
        "free_count",
        "peak_live_bytes",
        "end_live_bytes",
        "outside_steps",
        "frees_of_older_blocks",
    )
}
"""``totals`` (and ``peak_step``: a step of ``steps``, or ``null`` when nothing was allocated)."""
_TABLES = {"events": EVENT_COLUMNS, "per_step": PER_STEP_COLUMNS}
_TOP_OP = {"alloc_bytes": Rule(), "alloc_count": Rule()}


@checked
def load_timeline(path: str | Path, *, events: bool = True) -> dict[str, Any]:
    """The timeline in ``path`` (plain or gzip JSON), every value checked (see the module docstring).

    With ``events=False``, ``events`` and ``per_step`` are their number of rows and ``ops`` its
    number of names: the file is read in a few MiB, whatever its size. Raises
    :class:`TimelineError`, and :class:`FileNotFoundError` for a missing file.
    """
    path = Path(path)
    stat_input(path, "memory timeline")
    with JsonStream(path, what="memory timeline", expected=_EXPECTED, error=TimelineError, limit=MAX_TIMELINE_BYTES) as stream:
        return _Reader(stream, events).document()


class _Reader:
    """One timeline's pass: the top-level values, then the checks across them."""

    def __init__(self, stream: JsonStream, keep: bool) -> None:
        self.stream = stream
        self.keep = keep
        self.counter = ColumnCounter()
        self.window: Window | None = None
        self.ops: int | None = None
        # Where a step or op index was read before the bound it is checked against:
        # place -> (lowest, its index, highest, its index).
        self.unbounded: dict[str, tuple[Any, int, Any, int]] = {}
        self.version: int | None = None
        self.lacking: dict[str, list[str]] = {}  # totals and columns a version 1 file may lack, lacked

    def fail(self, message: str) -> TimelineError:
        return TimelineError(self.stream.path, message)

    def document(self) -> dict[str, Any]:
        stream = self.stream
        stream.expect("{", f"'{{' starting {_EXPECTED}")
        data: dict[str, Any] = {}
        header_chars = 0
        if stream.skip_ws() == "}":
            stream.expect("}", "'}'")
        else:
            while True:
                key, _, _ = stream.value("a top-level key")
                if not isinstance(key, str):
                    raise self.fail(f"a top-level key is {_json(key)}, not a string")
                if key in data:
                    raise self.fail(f"{_json(key)} appears twice at the top level")
                stream.expect(":", f"':' after the key {_json(key)}")
                if key in _TABLES:
                    data[key] = self.table(key)
                elif key == "ops":
                    data[key] = self.names(key)
                    self.ops = data[key] if isinstance(data[key], int) else len(data[key])
                else:
                    value, start, end = stream.value(key[:40])
                    header_chars += end - start + len(key)
                    if header_chars > MAX_HEADER_CHARS:
                        raise self.fail(
                            f"the values other than events, per_step and ops hold over {MAX_HEADER_CHARS >> 20} MiB of JSON; "
                            "a timeline's are a few KiB"
                        )
                    data[key] = value
                    self.header(key, value)
                if stream.expect(",}", "',' or '}' after a top-level value") == "}":
                    break
        stream.end()
        self.complete(data)
        return data

    # -- the small values ------------------------------------------------------------------

    def header(self, key: str, value: Any) -> None:
        """Check a top-level value other than the tables as soon as it is read."""
        if key == "format" and value != TIMELINE_FORMAT:
            raise self.fail(f"format is {_json(value)}; expected {_EXPECTED}")
        if key == "version":
            if type(value) is not int or not 1 <= value <= VERSION:
                newer = type(value) is int and value > VERSION
                advice = ": it was written by a newer profwin-memory (pip install -U profwin-memory)" if newer else ""
                raise self.fail(f"version is {_json(value)}; this reader reads versions 1 to {VERSION}{advice}")
            self.version = value
        if key == "steps":
            try:
                window = Window.parse(value, field_name="steps") if isinstance(value, str) else None
            except ConfigError as exc:
                raise self.fail(str(exc)) from None
            if window is None or window.end is None or window.unit != "steps":
                raise self.fail(f"steps is {_json(value)}; it must be a bounded window of steps such as '20:80'")
            self.window = window
        elif key == "totals":
            self.totals(value)
        elif key == "top_ops":
            self.top_ops(value)

    def totals(self, totals: Any) -> None:
        """Check the totals as soon as they are read; one a version 1 file may lack, when the
        version is not read yet, is decided in :meth:`complete`."""
        if not isinstance(totals, dict):
            raise self.fail(f"totals is {_json(totals)}; it must be an object of {', '.join(TOTALS)} and peak_step")
        for name, rule in TOTALS.items():
            if name not in totals and name in V1_OPTIONAL_TOTALS and self.version in (None, 1):
                self.lacking.setdefault("totals", []).append(name)
                continue
            self.scalar(totals, name, rule, f"totals.{name}")
        if "peak_step" not in totals:
            raise self.fail("totals.peak_step is missing")
        if totals["peak_step"] is not None:
            self.scalar(totals, "peak_step", Rule(), "totals.peak_step")  # within steps: checked in complete()

    def top_ops(self, top_ops: Any) -> None:
        if not isinstance(top_ops, list):
            raise self.fail(f"top_ops is {_json(top_ops)}; it must be a list of {{op, alloc_bytes, alloc_count}}")
        for i, entry in enumerate(top_ops):
            place = f"top_ops[{i}]"
            if not isinstance(entry, dict):
                raise self.fail(f"{place} is {_json(entry)}; it must be an object {{op, alloc_bytes, alloc_count}}")
            if not isinstance(entry.get("op"), str):
                raise self.fail(f"{place}.op is {_json(entry.get('op'))}; it must be the op's name, a string")
            for name, rule in _TOP_OP.items():
                self.scalar(entry, name, rule, f"{place}.{name}")

    def scalar(self, holder: Mapping[str, Any], name: str, rule: Rule, place: str) -> None:
        if name not in holder:
            raise self.fail(f"{place} is missing")
        problem = _broken(holder[name], rule, rule.low, None)
        if problem:
            raise self.fail(f"{place} is {_json(holder[name])}; it must be {problem}")

    # -- the columns -----------------------------------------------------------------------

    def table(self, table: str) -> Any:
        """Read the object of columns ``table``; its columns (or, not kept, its number of rows)."""
        stream = self.stream
        rules = _TABLES[table]
        stream.expect("{", f"'{{' starting {table} (an object of columns: {', '.join(rules)})")
        lengths: dict[str, int] = {}
        kept: dict[str, list[Any]] = {}
        if stream.skip_ws() == "}":
            stream.expect("}", "'}'")
        else:
            while True:
                name, _, _ = stream.value(f"a column name of {table}")
                if not isinstance(name, str) or name not in rules:
                    raise self.fail(f"{table}.{_json(name)} is not a column of {table} ({', '.join(rules)})")
                if name in lengths:
                    raise self.fail(f"{table}.{name} appears twice")
                stream.expect(":", f"':' after {table}.{name}")
                lengths[name] = self.column(f"{table}.{name}", rules[name], kept.setdefault(name, []) if self.keep else None)
                if stream.expect(",}", f"',' or '}}' after {table}.{name}") == "}":
                    break
        missing = [name for name in rules if name not in lengths]
        lacking = [name for name in missing if name in V1_OPTIONAL_COLUMNS[table] and self.version in (None, 1)]
        self.lacking[table] = lacking  # may be lacked by a version 1 file: checked once the version is known
        missing = [name for name in missing if name not in lacking]
        if missing:
            raise self.fail(f"{table} lacks the column{'s' * (len(missing) > 1)} {', '.join(missing)}")
        first = next(iter(rules))
        for name, length in lengths.items():
            if length != lengths[first]:
                raise self.fail(
                    f"{table}.{name} has {length:,} rows and {table}.{first} {lengths[first]:,}: the columns of a table are equally long"
                )
        return kept if self.keep else lengths[first]

    def column(self, place: str, rule: Rule, kept: list[Any] | None) -> int:
        """Read and check one column; its length. ``kept``: where its values go, if anywhere."""
        low, high, what = self.bounds(place, rule)
        decode: Callable[[str], Sequence[Any]] | None = _typed_decoder(rule.integer, low, high)
        if kept is None and not (what and high is None):
            # no value is kept or compared once a bound is read: none needs to be made (column_text)
            decode = self.counter.decoder(rule.integer, low, high, decode)
        count = 0
        for values, valid in self.stream.array_batches(place, decode):
            if not valid:
                _check(values, rule, low, high, place, count, self.fail, self.within(what))
            if what and high is None:  # its bound is not known yet: compare the extremes at the end
                self.extremes(place, values, count)
            if kept is not None:
                kept.extend(values)
            count += len(values)
        return count

    def bounds(self, place: str, rule: Rule) -> tuple[int | None, int | None, str]:
        """``(low, high, kind)`` for a column's values; ``kind`` is "step" or "op" where the
        upper bound comes from the file (``high`` is ``None`` while that is not read yet)."""
        if place.endswith(".step"):
            if self.window is None:
                return 0, None, "step"
            assert self.window.end is not None
            return self.window.start, self.window.end, "step"
        if place == "events.op":
            return 0, self.ops, "op"
        return rule.low, None, ""

    def within(self, kind: str) -> str:
        """The rule a step or an op index breaks, in words."""
        if kind == "step" and self.window is not None:
            return f"a step of the timeline's steps {self.window}"
        if kind == "op" and self.ops is not None:
            return f"an index into ops, which holds {self.ops:,} names"
        return ""

    def extremes(self, place: str, values: Sequence[Any], first: int) -> None:
        low, high = min(values), max(values)
        old = self.unbounded.get(place)
        lowest = (low, first + values.index(low)) if old is None or low < old[0] else old[:2]
        highest = (high, first + values.index(high)) if old is None or high > old[2] else old[2:]
        self.unbounded[place] = (*lowest, *highest)

    def bounded(self, value: int, index: int, place: str, kind: str) -> None:
        """A step within ``steps``, an op index within ``ops`` (checked once both are read)."""
        if kind == "step" and self.window is not None:
            assert self.window.end is not None
            low, high = self.window.start, self.window.end
        elif kind == "op" and self.ops is not None:
            low, high = 0, self.ops
        else:
            return
        if not low <= value < high:
            raise self.fail(f"{place}{f'[{index}]' if index >= 0 else ''} is {value}; it must be {self.within(kind)}")

    def names(self, key: str) -> Any:
        """``ops``: a list of strings; the list, or (not kept) its length."""
        kept: list[str] = []
        count = 0
        for values, valid in self.stream.array_batches(key, _typed_decoder(None, None, None)):
            if not valid:
                for i, value in enumerate(values):
                    if not isinstance(value, str):
                        raise self.fail(f"{key}[{count + i}] is {_json(value)}; it must be an op's name, a string")
            if self.keep:
                kept.extend(values)
            count += len(values)
        return kept if self.keep else count

    # -- across values ---------------------------------------------------------------------

    def complete(self, data: dict[str, Any]) -> None:
        """What only the whole file shows: the required keys, bounds read after their values."""
        if data.get("format") != TIMELINE_FORMAT:
            raise self.fail(f"format is missing; expected {_EXPECTED}")
        missing = [key for key in ("version", "steps", "totals", "per_step", "top_ops") if key not in data]
        if missing:
            raise self.fail(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing; a timeline has each")
        if self.version != 1:
            for place, lacked in self.lacking.items():
                if lacked and place == "totals":
                    raise self.fail(f"totals.{lacked[0]} is missing")
                if lacked:
                    raise self.fail(f"{place} lacks the column{'s' * (len(lacked) > 1)} {', '.join(lacked)}")
        for name in self.lacking.get("totals", []):  # version 1: an older shape, not known
            data["totals"][name] = None
        assert self.window is not None
        assert self.window.end is not None
        steps = self.window.end - self.window.start
        rows = data["per_step"] if isinstance(data["per_step"], int) else len(data["per_step"]["step"])
        if rows != steps:
            raise self.fail(f"per_step has {rows:,} rows; steps {self.window} has {steps:,}")
        if "events" in data and "ops" not in data:
            raise self.fail("events.op indexes ops, which is missing")
        for place, (low, low_at, high, high_at) in self.unbounded.items():
            kind = "op" if place == "events.op" else "step"
            self.bounded(low, low_at, place, kind)
            self.bounded(high, high_at, place, kind)
        peak = data["totals"]["peak_step"]
        if peak is not None:
            self.bounded(peak, -1, "totals.peak_step", "step")


def _broken(value: Any, rule: Rule, low: int | None, high: int | None, within: str = "") -> str:
    """What ``value`` must be, when it breaks ``rule`` within ``[low, high)`` (``within``: that
    range in words); "" when it keeps it."""
    kind = type(value)
    if kind is not int and (rule.integer or kind is not float):
        return "an integer" if rule.integer else "a number"
    if kind is float and not math.isfinite(value):
        return "a finite number"
    if (low is not None and value < low) or (high is not None and value >= high):
        what = "an integer" if rule.integer else "a number"
        return within or (f"{what} >= {low}" if high is None else f"{what} in [{low}, {high})")
    return ""


def _check(
    values: Sequence[Any],
    rule: Rule,
    low: int | None,
    high: int | None,
    place: str,
    first: int,
    fail: Callable[[str], TimelineError],
    within: str,
) -> None:
    """Check a column's values the standard decoder read (``first``: the index of ``values[0]``)."""
    kinds = set(map(type, values))
    if (
        kinds <= ({int} if rule.integer else {int, float})
        and (low is None or min(values) >= low)
        and (high is None or max(values) < high)
        and (float not in kinds or all(map(math.isfinite, values)))
    ):
        return
    for i, value in enumerate(values):
        problem = _broken(value, rule, low, high, within)
        if problem:
            raise fail(f"{place}[{first + i}] is {_json(value)}; it must be {problem}")


@functools.cache
def _typed_decoder(integer: bool | None, low: int | None, high: int | None) -> Callable[[str], list[Any]] | None:
    """msgspec's decoder of a JSON list of integers (``integer``), numbers, or strings (``None``)
    within ``[low, high)``, which checks each element as it decodes it; ``None`` without msgspec."""
    msgspec = fast_module("msgspec")
    if msgspec is None:
        return None
    from typing import Annotated

    element: Any = str if integer is None else int if integer else float
    if low is not None or high is not None:
        element = Annotated[element, msgspec.Meta(ge=low, lt=high)]
    decode: Callable[[str], list[Any]] = msgspec.json.Decoder(list[element]).decode
    return decode


def _json(value: Any, limit: int = 80) -> str:
    """``value`` as the file writes it (``"5"`` for a string, ``NaN``), cut to ``limit`` characters."""
    text = json.dumps(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text):,} characters)"
