"""The session timeline, recorded: a few numbers per engine step for a whole profiling session.

How it works, and why: docs/internals.md, ``profwin.runtime.timeline_record``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from attrs import frozen

from profwin.arguments import checked
from profwin.atomic import write_atomic
from profwin.errors import ConfigError, shown
from profwin.protocols import Artifact
from profwin.window import Window

__all__ = [
    "FLAG",
    "FORMAT",
    "PART_STEPS",
    "REQUEST_FIELDS",
    "STEP_FIELDS",
    "SUFFIX",
    "TIMELINE",
    "VERSION",
    "TimelineLayout",
    "TimelineRecorder",
    "decode_timeline",
    "encode_timeline",
    "timeline_artifacts",
    "timeline_name",
]

FORMAT = "profwin.timeline"
"""The ``format`` key of every timeline file."""
VERSION = 1
"""The version of the timeline format this profwin writes; the reader refuses a newer one."""
SUFFIX = ".timeline.json"
STEP_FIELDS: tuple[str, ...] = (
    "step", "counter", "start_us", "dur_us", "batch", "prefilling", "prefill_tokens", "decoding", "produced",
    "token_median", "token_min", "token_max", "running", "waiting",
)  # fmt: skip
REQUEST_FIELDS: tuple[str, ...] = ("id", "admitted", "first_token", "last_token", "output", "finish")
FINISHES: tuple[str, ...] = ("length", "stop", "abort", "ended")


@frozen
class TimelineLayout:
    """What a timeline file is, for its readers (profwin-traces' ``profwin timeline``): the
    ``format`` key, the newest version written, the file suffix and the columns of its rows."""

    format: str
    version: int
    suffix: str
    step_fields: tuple[str, ...]
    request_fields: tuple[str, ...]


TIMELINE = TimelineLayout(FORMAT, VERSION, SUFFIX, STEP_FIELDS, REQUEST_FIELDS)
"""The layout this profwin writes (``profwin.plugin.files.TIMELINE``)."""

PART_STEPS = 50_000
"""Steps one timeline part holds at most: ~3 MB of file, ~10 MB of memory while recorded."""
MAX_OPEN_REQUESTS = 1 << 20
"""Requests held open at once; past this the oldest is written as it stands (finish null)."""
MAX_ID = 200
"""Characters of a request id kept (ids are the engine's: bounded so a hostile one cannot grow the file)."""

FLAG = 1 << 43
"""Added to a window's start value (vLLM's ``delay_iterations``, SGLang's ``start_step``) to ask
the engine plugin for the timeline. It lies past token windows' range (``2**41``..``2**42``) and
SGLang's relative one (``2**40``..``2**41``), far below profwin's SGLang disarm step (``2**62``)."""


@checked
def encode_timeline(start: int | None) -> int:
    """The start value that asks for a timeline: ``FLAG + start`` (``None``, an engine's "now", is
    sent as ``FLAG + 0``)."""
    if start is not None and not 0 <= start < FLAG:
        raise ConfigError(f"must be None or an int in [0, 2**43) (got {shown(start)})", path="start")
    return FLAG + (start or 0)


@checked
def decode_timeline(start: object) -> tuple[object, bool]:
    """``(the start value without the flag, whether the flag was there)``; any other value as it is."""
    if isinstance(start, int) and not isinstance(start, bool) and FLAG <= start < 2 * FLAG:
        return start - FLAG, True
    return start, False


_NAME = re.compile(r"(?P<prefix>.+)_rank(?P<rank>\d+)_(?P<stamp>\d+)(?:_part(?P<part>\d{4,})_s\d+-\d+)?" + re.escape(SUFFIX))


@checked
def timeline_name(prefix: str, rank: int, stamp: int, *, part: int | None = None, steps: Window | None = None) -> str:
    """``{prefix}_rank{rank}_{stamp}.timeline.json``, or for a part of a long session
    ``..._{stamp}_part{part:04d}_s{start}-{end}.timeline.json`` (:mod:`profwin.parts`' naming):
    ``stamp`` (the session's start, ns since the epoch) keeps sessions of one prefix apart."""
    if part is None:
        return f"{prefix}_rank{rank}_{stamp}{SUFFIX}"
    if steps is None or steps.end is None:
        raise ConfigError(f"a part's name needs its steps, a closed window (got {shown(steps)})", path="steps")
    return f"{prefix}_rank{rank}_{stamp}_part{part:04d}_s{steps.start}-{steps.end}{SUFFIX}"


@checked
def timeline_artifacts(paths: Iterable[Path], *, prefix: str | None, producer: str) -> list[Artifact]:
    """The timeline files among ``paths`` (a session's new files) named for ``prefix`` (``None``:
    any), as artifacts of kind ``timeline`` with the session steps each holds."""
    found = []
    for path in sorted(paths):
        match = _NAME.fullmatch(path.name)
        if match is None or (prefix is not None and match["prefix"] != prefix):
            continue
        steps = None
        part = re.search(r"_s(\d+)-(\d+)" + re.escape(SUFFIX) + "$", path.name)
        if part is not None and int(part[2]) > int(part[1]):
            steps = Window(int(part[1]), int(part[2]))
        try:
            size = path.stat().st_size
        except OSError:
            continue
        found.append(Artifact(path=path, steps=steps, bytes=size, rank=int(match["rank"]), kind="timeline", producer=producer))
    return found


def _spread(values: list[int]) -> tuple[int | None, int | None, int | None]:
    """The lower median, the least and the largest of ``values`` (sorted in place: one sort)."""
    if not values:
        return None, None, None
    values.sort()
    return values[(len(values) - 1) // 2], values[0], values[-1]


@checked
class TimelineRecorder:
    """One session's timeline on one rank, kept in memory a part at a time (docs/internals.md).

    An engine plugin calls, for each step, :meth:`begin` before it runs and :meth:`end` after;
    :meth:`finish` when the engine says a request ended; :meth:`close` at the session's stop,
    which writes the last part and returns every file written. A :class:`profwin.Session` calls
    :meth:`tick` at each step boundary instead (times only).

    Args:
        directory: where the files go (the window's trace folder).
        prefix: the session's file prefix.
        rank: the rank that records.
        engine: ``vllm``, ``sglang``, ``torch``...; ``engine_version`` its version.
        session: the profiling session's id, when the recorder knows it (else the session's
            client writes it beside the file, :mod:`profwin.provenance`).
        window: the window asked for, as text (``"4:12 tokens"``).
        part_steps: steps per part (:data:`PART_STEPS`).
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        prefix: str,
        rank: int,
        engine: str,
        engine_version: str | None = None,
        session: str | None = None,
        window: str | None = None,
        part_steps: int = PART_STEPS,
    ) -> None:
        if not 1 <= part_steps <= 1 << 31:
            raise ConfigError(f"must be in [1, 2**31] (got {shown(part_steps)})", path="part_steps")
        self.directory = Path(directory)
        self.prefix = prefix
        self.rank = rank
        self.part_steps = part_steps
        self.stamp = time.time_ns()
        self._t0 = time.perf_counter_ns()
        self.header: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "engine": engine, "engine_version": engine_version, "rank": rank,
            "prefix": prefix, "session": session, "started_unix_ns": self.stamp, "window": window, "window_steps": None,
        }  # fmt: skip
        self.steps = 0
        """Steps begun so far (the index of the next one)."""
        self._rows: list[list[Any]] = []
        self._first = 0  # the first step of the part in memory
        self._row: list[Any] | None = None
        self._open: dict[str, list[Any]] = {}  # request id -> its row, and max tokens when known
        self._done: list[list[Any]] = []
        self._part = 0
        self.written: list[Path] = []
        """The files written so far."""
        self._spans: list[Window | None] = []  # the steps of each
        self.closed = False

    # -- steps --------------------------------------------------------------------------------

    def begin(
        self,
        *,
        batch: int | None = None,
        prefilling: int | None = None,
        prefill_tokens: int | None = None,
        produced: Iterable[tuple[str, int]] = (),
        admitted: Iterable[str] = (),
        counter: int | None = None,
        running: int | None = None,
        waiting: int | None = None,
    ) -> None:
        """A step begins: ``produced`` holds ``(request id, response-token index)`` for each token
        it makes, ``admitted`` the requests it holds for the first time."""
        if len(self._rows) >= self.part_steps:
            self._write_part()
        step = self.steps
        self.steps = step + 1
        requests = self._open
        for rid in admitted:
            if rid not in requests:
                requests[rid] = [rid[:MAX_ID], step, None, None, 0, None, None]
        indices = []
        for rid, index in produced:
            indices.append(index)
            request = requests.get(rid)
            if request is None:  # admitted before the session started
                request = requests[rid] = [rid[:MAX_ID], None, None, None, 0, None, None]
            if index == 0:
                request[2] = step
            request[3] = step
            request[4] = index + 1
        if len(requests) > MAX_OPEN_REQUESTS:
            self._done.append(requests.pop(next(iter(requests))))
        decoding = None if batch is None or prefilling is None else batch - prefilling
        made = len(indices)
        row = [step, counter, (time.perf_counter_ns() - self._t0) // 1000, None, batch, prefilling, prefill_tokens, decoding,
               made, *_spread(indices), running, waiting]  # fmt: skip
        self._rows.append(row)
        self._row = row

    def end(self, step: int | None = None, *, now_us: int | None = None) -> None:
        """The step that began last (or step ``step``, when it is still in memory: an engine that
        processes a batch's result after the next batch began) has ended."""
        if step is None:
            row = self._row
        else:
            index = step - self._first
            row = self._rows[index] if 0 <= index < len(self._rows) else None
        if row is not None and row[3] is None:
            row[3] = ((time.perf_counter_ns() - self._t0) // 1000 if now_us is None else now_us) - row[2]

    def tick(self) -> None:
        """A step boundary of an in-process loop: the step in progress ends, the next begins (at
        the same instant: a loop's steps tile its time)."""
        now = (time.perf_counter_ns() - self._t0) // 1000
        self.end(now_us=now)
        if len(self._rows) >= self.part_steps:
            self._write_part()
        step = self.steps
        self.steps = step + 1
        row = [step, None, now, *([None] * (len(STEP_FIELDS) - 3))]
        self._rows.append(row)
        self._row = row

    def drop_last(self) -> None:
        """Forget the step begun last (an in-process loop's step that began but never ran)."""
        if self._rows and self._rows[-1] is self._row:
            self._rows.pop()
            self.steps -= 1
            self._row = None

    # -- requests -----------------------------------------------------------------------------

    def limit(self, rid: str, max_tokens: int | None) -> None:
        """The most tokens request ``rid`` may produce (vLLM's ``max_tokens``), to tell ``length``."""
        request = self._open.get(rid)
        if request is not None:
            request[6] = max_tokens

    def finish(self, rid: str, reason: str | None = None) -> None:
        """The engine says request ``rid`` ended (``reason`` one of :data:`FINISHES`; ``None``:
        ``length`` when it reached its limit, else ``ended``)."""
        request = self._open.pop(rid, None)
        if request is None:
            return
        request[5] = reason if reason in FINISHES else _by_limit(request) or "ended"
        self._done.append(request)

    # -- files --------------------------------------------------------------------------------

    def set_window(self, steps: Window | None) -> None:
        """The session steps the window's trace holds, when the engine plugin knows them."""
        self.header["window_steps"] = None if steps is None else str(steps)

    def _write_part(self) -> None:
        self._part += 1
        self._write(self._part)

    def _write(self, part: int | None) -> None:
        first, rows = self._first, self._rows
        steps = Window(first, first + len(rows)) if rows else None
        name = timeline_name(self.prefix, self.rank, self.stamp, part=part, steps=steps if part is not None else None)
        document = {
            **self.header, "part": part, "steps": None if steps is None else str(steps),
            "step_fields": list(STEP_FIELDS), "request_fields": list(REQUEST_FIELDS),
        }  # fmt: skip
        # One encoder call per list (a part's 50,000 rows in a few tens of ms); a step a line (its
        # numbers hold no "],["), requests on one line (their ids are the engine's strings).
        compact = (",", ":")
        step_rows = json.dumps(rows, separators=compact).replace("],[", "],\n[")
        request_rows = json.dumps([r[:6] for r in self._done], separators=compact)
        text = f'{json.dumps(document, separators=compact)[:-1]},\n"step_rows":{step_rows},\n"request_rows":{request_rows}}}\n'
        path = write_atomic(self.directory / name, text.encode())
        self.written.append(path)
        self._spans.append(steps)
        self._first += len(rows)
        self._rows, self._done = [], []

    def close(self) -> list[Path]:
        """Write what is left (a single file when the session fit in one part) and return every
        file written. Requests still open are written as they stand. Idempotent."""
        if self.closed:
            return self.written
        self.closed = True
        self.end()
        for request in self._open.values():
            request[5] = _by_limit(request)
            self._done.append(request)
        self._open = {}
        if self._part:
            self._write_part()
        else:
            self._write(None)
        return self.written

    def artifacts(self, producer: str) -> list[Artifact]:
        """The files written, as artifacts of kind ``timeline`` with the steps each holds."""
        return [
            Artifact(path=path, steps=steps, bytes=path.stat().st_size, rank=self.rank, kind="timeline", producer=producer)
            for path, steps in zip(self.written, self._spans, strict=True)
        ]


def _by_limit(request: list[Any]) -> str | None:
    return "length" if request[6] is not None and request[4] >= request[6] else None
