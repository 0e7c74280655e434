"""``profwin timeline``: where a rollout's time goes, and where the window sits in it.

Reads the session timelines profwin records with ``record: [timeline]``
(:mod:`profwin.runtime.timeline_record`: one row per engine step, one per request) and says, per rank or
engine, in text, JSON or a plot:

- **phases** of the batch (requests in a step) against its peak::

      batch ^          ___________________
      peak  |         /                   \\__     __
      90%   |- - - - /- - - - - - - - - - - - \\- -/  \\ - - - -
            |       /                          \\/     \\
      25%   |- - - / - - - - - - - - - - - - - - - - - -\\_ _ _ _ _ _
            |     /                                               \\__
            +-----+-------------------------------------------+--------> step
             ramp |                 steady                    |  tail
                  first step at >= 90% of the peak            after the last step above 25%

  with each phase's share of the session's time (the wall clock between step starts) and of its
  tokens;
- **the tail**: its steps and time (the batch at <= 25% of its peak to the end: a few long
  responses keep the engine running at a fraction of its size), and the time until 50%, 90% and
  100% of the requests had their last token;
- **where the window sits**: the steps the window's trace holds (the engine plugin says them,
  or the trace's provenance), the phase(s) they fall in, and the tokens the median request
  produced in them;
- **a suggested window**, in steps and in tokens: ``--length`` steps in the middle of steady
  decode, and the tokens the median request produces there;
- for several ranks or engines, the same per rank and their **imbalance** (the slowest rank's
  session and tail against the fastest's).

A session written in parts (:data:`~profwin.runtime.timeline_record.PART_STEPS` steps each) is read as
one; a file of a newer format version than this profwin reads is refused, saying which it needs.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from profwin.plugin import ConfigError, JsonForm, Window, checked, shown
from profwin.plugin.files import TIMELINE, read_input
from profwin_traces.provenance import read_sidecar
from profwin_traces.reader import TraceError

FORMAT, VERSION, SUFFIX = TIMELINE.format, TIMELINE.version, TIMELINE.suffix
STEP_FIELDS, REQUEST_FIELDS = TIMELINE.step_fields, TIMELINE.request_fields

__all__ = [
    "MAX_TIMELINE_BYTES",
    "Phase",
    "RankTimeline",
    "Timeline",
    "TimelineReport",
    "analyze",
    "plot_timeline",
    "read_timelines",
    "render_timeline",
    "timeline_events",
    "timeline_report",
]

MAX_TIMELINE_BYTES = 1 << 30
"""The largest timeline file read (a part of 50,000 steps is ~3 MB)."""
RAMP_SHARE = 0.9
"""The ramp ends at the first step whose batch reaches this share of the peak."""
TAIL_SHARE = 0.25
"""The tail begins after the last step whose batch is above this share of the peak."""
FINISHED = (50, 90, 100)

_HEADER = {
    "engine": str, "engine_version": str, "rank": int, "prefix": str, "session": str, "started_unix_ns": int,
    "window": str, "window_steps": str, "part": int,
}  # fmt: skip
"""The header fields the recorder writes, each of this type or null: what the reader relies on."""
_STEP = {name: i for i, name in enumerate(STEP_FIELDS)}
_REQUEST = {name: i for i, name in enumerate(REQUEST_FIELDS)}


@frozen
class Timeline:
    """One recorded session timeline (one rank or engine), its parts joined.

    Attributes:
        paths: its files, in part order.
        header: what the recorder said (engine, engine_version, rank, prefix, session, window, ...).
        steps: the step rows (:data:`profwin.plugin.files.TIMELINE`'s ``step_fields``), in order.
        requests: the request rows (its ``request_fields``).
        provenance: the sidecar the session's client wrote beside the first file (session,
            ``trace_steps``, a rollout profiler's ``rollout``), or ``{}``.
    """

    paths: tuple[Path, ...]
    header: dict[str, Any]
    steps: tuple[tuple[Any, ...], ...]
    requests: tuple[tuple[Any, ...], ...]
    provenance: dict[str, Any]

    @property
    def label(self) -> str:
        """``<prefix> rank <r>``: how a rank or engine is named in reports."""
        return f"{self.header.get('prefix')} rank {self.header.get('rank')}"

    @property
    def session(self) -> str | None:
        found = self.header.get("session") or self.provenance.get("session")
        return str(found) if found else None

    @property
    def window_steps(self) -> Window | None:
        """The session steps the window's trace holds: the engine plugin's word, else the
        trace's provenance, else ``None``."""
        for text in (self.header.get("window_steps"), self.provenance.get("trace_steps")):
            if isinstance(text, str):
                try:
                    return Window.parse(text)
                except ConfigError:
                    continue
        return None


def _load(path: Path) -> dict[str, Any]:
    try:
        raw = read_input(path, limit=MAX_TIMELINE_BYTES, what="timeline")
    except ConfigError as exc:  # unreadable (EIO), too large, not a regular file: said as it is, not as bad JSON
        raise TraceError(path, str(exc)) from None
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TraceError(path, f"not a profwin timeline: invalid JSON ({str(exc)[:200]})") from None
    except RecursionError:  # a timeline is two levels deep: this one is not a timeline
        raise TraceError(path, "not a profwin timeline: JSON nested too deep to read") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TraceError(path, f'not a profwin timeline (no "format": {FORMAT!r}); `profwin timeline` reads *{SUFFIX} files')
    version = data.get("version")
    if type(version) is not int or version < 1:
        raise TraceError(path, f"a timeline without a format version (got {shown(version)})")
    if version > VERSION:
        raise TraceError(
            path,
            f"timeline format version {version}, and this profwin-core reads version {VERSION} at most: "
            "upgrade profwin-core to read it",
        )
    fields, request_fields = data.get("step_fields"), data.get("request_fields")
    if fields != list(STEP_FIELDS) or request_fields != list(REQUEST_FIELDS):
        raise TraceError(path, f"timeline version {version} with other fields than it defines ({shown(fields)})")
    for name, kind in _HEADER.items():
        value = data.get(name)
        if value is not None and type(value) is not kind:
            what = "an integer" if kind is int else "a string"
            raise TraceError(path, f"a timeline whose {name} is not {what} or null (got {shown(value)})")
    rows, requests = data.get("step_rows"), data.get("request_rows")
    if not isinstance(rows, list) or not isinstance(requests, list):
        raise TraceError(path, "a timeline without step_rows and request_rows lists")
    width, request_width = len(STEP_FIELDS), len(REQUEST_FIELDS)
    for row in rows:
        if not isinstance(row, list) or len(row) != width or not all(v is None or type(v) is int for v in row):
            raise TraceError(path, f"a step row is not {width} integers or nulls: {shown(row)}")
    for row in requests:
        if not isinstance(row, list) or len(row) != request_width:
            raise TraceError(path, f"a request row is not {request_width} values: {shown(row)}")
    return data


@checked
def timeline_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The timeline files named: files as given, folders searched two levels deep (a session's
    folder, or a ``profwin collect`` folder of one folder per node)."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found += sorted({*path.glob(f"*{SUFFIX}"), *path.glob(f"*/*{SUFFIX}")})
        elif path.exists():
            found.append(path)
        else:
            raise TraceError(path, "no such file or folder")
    if not found:
        raise TraceError(", ".join(str(p) for p in paths), f"no session timeline (*{SUFFIX}) there")
    return list(dict.fromkeys(found))


@checked
def read_timelines(paths: Iterable[str | os.PathLike[str]], *, session: str | None = None) -> tuple[list[Timeline], list[str]]:
    """The timelines in ``paths`` (files or folders), each rank's or engine's parts joined, and
    notes. Of several sessions, ``session`` (an id or its prefix) chooses one; the default is
    the newest, with the sessions of other ranks or engines that ran at the same time (the ranks
    of one job each start a session of their own in process), said in a note."""
    streams: dict[tuple[Any, ...], list[tuple[dict[str, Any], Path]]] = {}
    for path in timeline_files(paths):
        data = _load(path)
        key = (data.get("prefix"), data.get("rank"), data.get("started_unix_ns"), str(path.parent))
        streams.setdefault(key, []).append((data, path))
    timelines = [_joined(parts) for parts in streams.values()]
    notes: list[str] = []
    if session is not None:
        chosen = [t for t in timelines if (t.session or "").startswith(session)]
        if not chosen:
            found = sorted({t.session or "(no session id)" for t in timelines})
            raise ConfigError(f"no timeline of session {shown(session)} (found {found})", path="session")
        timelines = chosen
    elif all(t.session for t in timelines) and len({t.session for t in timelines}) > 1:
        newest = max(timelines, key=_started)
        count = len({t.session for t in timelines})
        chosen = [t for t in timelines if t.session == newest.session]
        beside = _alongside(chosen, [t for t in timelines if t.session != newest.session])
        with_them = ""
        if beside:
            ids = ", ".join(sorted({str(t.session) for t in beside}))
            with_them = f", and those of other ranks that ran at the same time ({ids})"
        notes.append(f"{count} sessions found; reading the newest, {newest.session}{with_them} (choose one with --session)")
        timelines = chosen + beside
    else:  # files without a session id (no provenance beside them): each rank's or engine's newest
        latest: dict[tuple[Any, Any], Timeline] = {}
        for t in timelines:
            who = _who(t)
            if who not in latest or _started(t) > _started(latest[who]):
                latest[who] = t
        if len(latest) < len(timelines):
            notes.append(
                f"{len(timelines) - len(latest)} older timeline(s) of the same rank left out: each rank's newest is read"
            )
        timelines = list(latest.values())
    timelines.sort(key=lambda t: (str(t.header.get("prefix")), t.header.get("rank") or 0))
    return timelines, notes


def _who(timeline: Timeline) -> tuple[Any, Any]:
    """The rank or engine a timeline is of: its prefix and rank."""
    return timeline.header.get("prefix"), timeline.header.get("rank")


def _started(timeline: Timeline) -> int:
    started: int = timeline.header.get("started_unix_ns") or 0
    return started


def _span(timeline: Timeline) -> tuple[int, int]:
    """When the session ran on this rank, in ns since the epoch: its start to its last step's end."""
    start = _started(timeline)
    if not timeline.steps:
        return start, start
    last = timeline.steps[-1]
    return start, start + 1000 * ((last[_STEP["start_us"]] or 0) + (last[_STEP["dur_us"]] or 0))


def _alongside(chosen: list[Timeline], others: list[Timeline]) -> list[Timeline]:
    """Of ``others``, for each rank or engine that ``chosen`` lacks, its newest session that ran
    while ``chosen``'s did."""
    spans = [_span(t) for t in chosen]
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    have = {_who(t) for t in chosen}
    found: dict[tuple[Any, Any], Timeline] = {}
    for t in others:
        who = _who(t)
        start, end = _span(t)
        if who in have or start > last or end < first:
            continue
        if who not in found or start > _started(found[who]):
            found[who] = t
    return list(found.values())


def _joined(parts: list[tuple[dict[str, Any], Path]]) -> Timeline:
    parts.sort(key=lambda item: item[0].get("part") or 0)
    steps: list[tuple[Any, ...]] = []
    requests: list[tuple[Any, ...]] = []
    for data, path in parts:
        rows = data["step_rows"]
        if rows and steps and rows[0][0] != steps[-1][0] + 1:
            raise TraceError(
                path, f"a part that does not follow the one before (its first step is {rows[0][0]}, expected {steps[-1][0] + 1})"
            )
        steps += [tuple(r) for r in rows]
        requests += [tuple(r) for r in data["request_rows"]]
    header = {k: v for k, v in parts[-1][0].items() if k not in ("step_rows", "request_rows")}
    return Timeline(
        paths=tuple(p for _, p in parts), header=header, steps=tuple(steps), requests=tuple(requests),
        provenance=read_sidecar(parts[0][1]),
    )  # fmt: skip


# -- analysis ----------------------------------------------------------------------------------


@frozen
class Phase:
    """One phase of a session: its steps, and its share of the session's time and tokens."""

    name: str
    steps: str
    """As a window, ``"12:340"`` (empty: ``""``)."""
    step_count: int
    time_s: float
    time_share: float
    tokens: int
    token_share: float


@frozen
class RankTimeline(JsonForm):
    """What :func:`analyze` found in one rank's (or engine's) timeline."""

    label: str
    engine: str | None
    rank: int | None
    session: str | None
    paths: tuple[str, ...]
    steps: int
    requests: int
    time_s: float
    """The session's wall time: first step's start to the last step's end."""
    tokens: int
    peak_batch: int | None
    phases: tuple[Phase, ...]
    tail_steps: int
    tail_time_s: float
    tail_share: float
    finished_s: dict[str, float | None]
    """Seconds from the session's start until 50%, 90% and 100% of its requests had their last token."""
    finished_step: dict[str, int | None]
    window: str | None
    """The window asked for (``"20:80 tokens"``)."""
    window_steps: str | None
    window_place: str
    """Where the window's steps sit, in words."""
    window_tokens: str | None
    """The median request's tokens in the window's steps (``"20:80"``)."""
    suggested_steps: str | None
    """``--length`` steps in the middle of steady decode (``"45:61"``)."""
    suggested_steps_tokens: str | None
    """The median request's tokens in those steps: "tokens 4:24 of most requests fall in steps 45:61"."""
    suggested_tokens: str | None
    """A token window that opens at those steps (``"60:76"``): its start is the token the request
    furthest ahead produces at their first step (a token window opens where any request reaches it)."""
    suggested_tokens_open: int | None
    """The step that token window opens at: the first step where a request produces a token in it."""
    steady_tokens: str | None
    """The median request's tokens across steady decode."""
    step_ms: dict[str, float]
    """Median and maximum step duration (ms)."""
    notes: tuple[str, ...]


@frozen
class TimelineReport(JsonForm):
    """:func:`timeline_report`: every rank's (or engine's) analysis, and their imbalance."""

    ranks: tuple[RankTimeline, ...]
    imbalance: dict[str, Any]
    notes: tuple[str, ...]


def _periods(starts: Sequence[int], durations: Sequence[int | None]) -> list[int]:
    """Each step's wall time (us): to the next step's start; the last step, its own duration."""
    out = [b - a for a, b in itertools.pairwise(starts)]
    last = durations[-1] if durations else 0
    out.append(max(last or 0, 0))
    return out


def analyze(timeline: Timeline, *, length: int = 32) -> RankTimeline:
    """One rank's phases, tail, finishing times, window place and suggested window (see the
    module). ``length``: the suggested window's steps."""
    rows = timeline.steps
    starts = [r[_STEP["start_us"]] or 0 for r in rows]
    durations = [r[_STEP["dur_us"]] for r in rows]
    periods = _periods(starts, durations) if rows else []
    total_us = sum(periods)
    produced = [r[_STEP["produced"]] or 0 for r in rows]
    tokens = sum(produced)
    batches = [r[_STEP["batch"]] for r in rows]
    notes: list[str] = []
    known = [b for b in batches if b is not None]
    peak = max(known) if known else None
    phases: list[Phase] = []
    tail_first = len(rows)
    bounds: dict[str, tuple[int, int]] = {}
    if peak:
        ramp_end = next(i for i, b in enumerate(batches) if b is not None and b >= RAMP_SHARE * peak)
        tail_first = max(i for i, b in enumerate(batches) if b is not None and b > TAIL_SHARE * peak) + 1
        bounds = {"ramp": (0, ramp_end), "steady": (ramp_end, tail_first), "tail": (tail_first, len(rows))}
        for name, (a, b) in bounds.items():
            time_us = sum(periods[a:b])
            made = sum(produced[a:b])
            phases.append(
                Phase(
                    name=name, steps=f"{a}:{b}" if b > a else "", step_count=b - a, time_s=round(time_us / 1e6, 6),
                    time_share=round(time_us / total_us, 4) if total_us else 0.0, tokens=made,
                    token_share=round(made / tokens, 4) if tokens else 0.0,
                )
            )  # fmt: skip
    elif rows:
        notes.append("the timeline has no batch sizes (an in-process session times its steps only): no phases")
    tail_us = sum(periods[tail_first:])
    finished_s, finished_step = _finishing(timeline, starts, durations)
    window = timeline.window_steps
    medians = [r[_STEP["token_median"]] for r in rows]
    place, window_tokens = _place(window, bounds, medians, len(rows), periods, total_us)
    suggested_steps = suggested_steps_tokens = suggested_tokens = steady_tokens = None
    opens: int | None = None
    if "steady" in bounds and bounds["steady"][1] > bounds["steady"][0]:
        a, b = bounds["steady"]
        steady_tokens = _tokens(medians[a:b])
        n = min(max(length, 1), b - a)
        first = a + (b - a - n) // 2
        suggested_steps = f"{first}:{first + n}"
        suggested_steps_tokens = _tokens(medians[first : first + n])
        ahead = next((r[_STEP["token_max"]] for r in rows[first:] if r[_STEP["token_max"]] is not None), None)
        if ahead is not None:
            suggested_tokens = f"{ahead}:{ahead + n}"
            opens = next(
                (
                    r[_STEP["step"]]
                    for r in rows
                    if r[_STEP["token_max"]] is not None and r[_STEP["token_max"]] >= ahead and r[_STEP["token_min"]] < ahead + n
                ),
                None,
            )
    known_durations = sorted(d for d in durations if d is not None)
    step_ms = (
        {"median": known_durations[(len(known_durations) - 1) // 2] / 1000, "max": known_durations[-1] / 1000}
        if known_durations
        else {}
    )
    window_text = timeline.header.get("window")
    return RankTimeline(
        label=timeline.label, engine=timeline.header.get("engine"), rank=timeline.header.get("rank"),
        session=timeline.session, paths=tuple(str(p) for p in timeline.paths), steps=len(rows),
        requests=len(timeline.requests), time_s=round(total_us / 1e6, 6), tokens=tokens, peak_batch=peak,
        phases=tuple(phases), tail_steps=len(rows) - tail_first if peak else 0,
        tail_time_s=round(tail_us / 1e6, 6) if peak else 0.0,
        tail_share=round(tail_us / total_us, 4) if peak and total_us else 0.0, finished_s=finished_s,
        finished_step=finished_step, window=window_text if isinstance(window_text, str) else None,
        window_steps=None if window is None else str(window), window_place=place, window_tokens=window_tokens,
        suggested_steps=suggested_steps, suggested_steps_tokens=suggested_steps_tokens, suggested_tokens=suggested_tokens,
        suggested_tokens_open=opens, steady_tokens=steady_tokens,
        step_ms=step_ms, notes=tuple(notes),
    )  # fmt: skip


def _tokens(medians: Sequence[int | None]) -> str | None:
    """The token indices the median request produced across some steps, as a window."""
    known = [m for m in medians if m is not None]
    return None if not known else f"{min(known)}:{max(known) + 1}"


def _finishing(timeline: Timeline, starts: list[int], durations: list[int | None]) -> tuple[dict[str, Any], dict[str, Any]]:
    ends = [s + (d or 0) for s, d in zip(starts, durations, strict=True)]
    last = sorted(r[_REQUEST["last_token"]] for r in timeline.requests if type(r[_REQUEST["last_token"]]) is int)
    last = [s for s in last if 0 <= s < len(ends)]
    seconds: dict[str, float | None] = {}
    steps: dict[str, int | None] = {}
    for share in FINISHED:
        if not last:
            seconds[f"{share}%"], steps[f"{share}%"] = None, None
            continue
        step = last[max(math.ceil(share / 100 * len(last)) - 1, 0)]
        seconds[f"{share}%"], steps[f"{share}%"] = round(ends[step] / 1e6, 6), step
    return seconds, steps


def _place(
    window: Window | None,
    bounds: dict[str, tuple[int, int]],
    medians: list[int | None],
    count: int,
    periods: list[int],
    total_us: int,
) -> tuple[str, str | None]:
    if window is None:
        return "no window steps known (no trace of this session, or it never opened)", None
    end = count if window.end is None else min(window.end, count)
    if window.start >= end:
        return f"steps {window} lie past the session's {count} steps", None
    inside = [f"{b - a} in {name}" for name, (lo, hi) in bounds.items() if (a := max(lo, window.start)) < (b := min(hi, end))]
    share = sum(periods[window.start : end]) / total_us if total_us else 0.0
    where = f"steps {window.start}:{end} ({', '.join(inside) if inside else 'no phase known'}), {share:.1%} of the session's time"
    return where, _tokens(medians[window.start : end])


@checked
def timeline_report(paths: Iterable[str | os.PathLike[str]], *, session: str | None = None, length: int = 32) -> TimelineReport:
    """Read and analyze the timelines in ``paths``; several ranks or engines are compared."""
    timelines, notes = read_timelines(paths, session=session)
    ranks = tuple(analyze(t, length=length) for t in timelines)
    return TimelineReport(ranks=ranks, imbalance=_imbalance(ranks), notes=tuple(notes))


def _imbalance(ranks: Sequence[RankTimeline]) -> dict[str, Any]:
    if len(ranks) < 2:
        return {}

    def spread(values: list[tuple[float | None, str]]) -> dict[str, Any]:
        known = [(v, label) for v, label in values if v is not None]
        if not known:
            return {}
        slow, fast = max(known), min(known)
        return {"max": slow[0], "max_rank": slow[1], "min": fast[0], "min_rank": fast[1],
                "ratio": round(slow[0] / fast[0], 3) if fast[0] else None}  # fmt: skip

    return {
        "time_s": spread([(r.time_s, r.label) for r in ranks]),
        "tail_time_s": spread([(r.tail_time_s, r.label) for r in ranks]),
        "finished_100_s": spread([(r.finished_s.get("100%"), r.label) for r in ranks]),
        "tokens": spread([(float(r.tokens), r.label) for r in ranks]),
    }


# -- text ----------------------------------------------------------------------------------------


@checked
def render_timeline(report: TimelineReport) -> str:
    """The report as text for a terminal."""
    lines: list[str] = []
    for r in report.ranks:
        lines.append(
            f"{r.label} ({r.engine}): {r.steps} steps, {r.requests} requests, {r.tokens} tokens in {r.time_s:.3f} s"
            + (f"; peak batch {r.peak_batch}" if r.peak_batch else "")
            + (f"; session {r.session}" if r.session else "")
        )
        if r.step_ms:
            lines.append(f"  step time: median {r.step_ms['median']:.3f} ms, max {r.step_ms['max']:.3f} ms")
        for p in r.phases:
            steps = f"steps {p.steps}" if p.steps else "no step"
            lines.append(
                f"  {p.name:<7} {steps:<18} {p.time_share:>6.1%} of time ({p.time_s:.3f} s), {p.token_share:>6.1%} of tokens"
            )
        if r.peak_batch:
            lines.append(
                f"  tail: {r.tail_steps} steps, {r.tail_time_s:.3f} s ({r.tail_share:.1%} of the time) at <= "
                f"{TAIL_SHARE:.0%} of the peak batch"
            )
        if r.finished_s.get("100%") is not None:
            done = ", ".join(f"{k} by {v:.3f} s (step {r.finished_step[k]})" for k, v in r.finished_s.items() if v is not None)
            lines.append(f"  requests finished: {done}")
        window = f"window {r.window}: " if r.window else "window: "
        lines.append(f"  {window}{r.window_place}" + (f"; median tokens {r.window_tokens}" if r.window_tokens else ""))
        if r.suggested_steps:
            lines.append(
                f"  suggested window: steps {r.suggested_steps} (--window {r.suggested_steps}), in the middle of steady decode "
                f"(steps {r.phases[1].steps}); tokens {r.suggested_steps_tokens} of the median request fall in them"
            )
            if r.suggested_tokens is not None:
                lines.append(
                    f"    in tokens: --window '{r.suggested_tokens} tokens' opens at step {r.suggested_tokens_open}, when the "
                    f"request furthest ahead reaches token {r.suggested_tokens.split(':')[0]}"
                )
        lines += [f"  note: {n}" for n in r.notes]
    if report.imbalance:
        lines.append("imbalance across ranks/engines (slowest / fastest):")
        for key, what in (("time_s", "session time"), ("tail_time_s", "tail time"), ("finished_100_s", "time to 100% finished")):
            found = report.imbalance.get(key) or {}
            if found.get("ratio") is not None:
                lines.append(
                    f"  {what}: {found['max']:.3f} s ({found['max_rank']}) / {found['min']:.3f} s ({found['min_rank']}) "
                    f"= {found['ratio']:.2f}x"
                )
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


# -- plot ----------------------------------------------------------------------------------------


@checked
def plot_timeline(report: TimelineReport, timelines: Sequence[Timeline], png_path: str | Path) -> Path:
    """Per rank: batch size and tokens per step over time with the phases and the window shaded,
    and below it each request's lifespan as a bar (Gantt), admission to last token."""
    from profwin_traces.plot import DPI, _pyplot

    plt = _pyplot()
    n = len(timelines)
    fig, axes = plt.subplots(2 * n, 1, figsize=(11, 5.5 * n), squeeze=False, height_ratios=[2, 3] * n)
    try:
        for k, (timeline, rank) in enumerate(zip(timelines, report.ranks, strict=True)):
            top, gantt = axes[2 * k][0], axes[2 * k + 1][0]
            _draw(timeline, rank, top, gantt)
        title = "session timeline" + (f": {report.ranks[0].label}" if n == 1 else f" of {n} ranks/engines")
        fig.suptitle(title, fontsize=10)
        path = Path(png_path)
        fig.tight_layout()
        fig.savefig(path, dpi=DPI)
        return path
    finally:
        plt.close(fig)


def _draw(timeline: Timeline, rank: RankTimeline, top: Any, gantt: Any) -> None:
    rows = timeline.steps
    starts = [(r[_STEP["start_us"]] or 0) / 1e6 for r in rows]
    ends = [s + (r[_STEP["dur_us"]] or 0) / 1e6 for s, r in zip(starts, rows, strict=True)]
    batches = [r[_STEP["batch"]] for r in rows]
    produced = [r[_STEP["produced"]] for r in rows]
    colors = {"ramp": "tab:green", "steady": "tab:blue", "tail": "tab:red"}
    for phase in rank.phases:
        if phase.steps:
            a, b = (int(v) for v in phase.steps.split(":"))
            top.axvspan(starts[a], ends[b - 1], color=colors[phase.name], alpha=0.07, linewidth=0)
            gantt.axvspan(starts[a], ends[b - 1], color=colors[phase.name], alpha=0.05, linewidth=0)
    window = timeline.window_steps
    if window is not None and window.start < len(rows):
        last = len(rows) - 1 if window.end is None else min(window.end, len(rows)) - 1
        for ax in (top, gantt):
            ax.axvspan(starts[window.start], ends[last], color="tab:orange", alpha=0.3, linewidth=0)
    if any(b is not None for b in batches):
        top.step(
            starts, [b or 0 for b in batches], where="post", color="tab:blue", linewidth=1.2, label="batch (requests in the step)"
        )
        twin = top.twinx()
        twin.step(starts, [p or 0 for p in produced], where="post", color="tab:purple", linewidth=0.9, linestyle=":",
                  label="tokens produced per step")  # fmt: skip
        twin.set_ylabel("tokens per step", color="tab:purple", fontsize=8)
        waiting = [r[_STEP["waiting"]] for r in rows]
        if any(w is not None for w in waiting):
            top.step(starts, [w or 0 for w in waiting], where="post", color="tab:gray", linewidth=0.8, linestyle="--",
                     label="waiting")  # fmt: skip
        top.set_ylabel("requests", fontsize=8)
        handles, labels = top.get_legend_handles_labels()
        more, more_labels = twin.get_legend_handles_labels()
        from matplotlib.patches import Patch  # type: ignore[import-not-found]

        handles += [*more, Patch(color="tab:orange", alpha=0.3), *(Patch(color=c, alpha=0.15) for c in colors.values())]
        labels += [*more_labels, f"window {rank.window or ''} (steps {rank.window_steps})", "ramp", "steady", "tail"]
        top.legend(handles, labels, loc="upper right", fontsize=7, ncol=2)
    else:
        top.plot(starts, [(e - s) * 1e3 for s, e in zip(starts, ends, strict=True)], color="tab:blue", linewidth=1)
        top.set_ylabel("step time (ms)", fontsize=8)
    top.set_title(f"{rank.label}: {rank.steps} steps, {rank.requests} requests, {rank.time_s:.2f} s", fontsize=9, loc="left")
    _gantt(timeline, starts, ends, gantt)
    gantt.set_xlabel("seconds since the session's start", fontsize=8)
    gantt.sharex(top)


def _gantt(timeline: Timeline, starts: list[float], ends: list[float], ax: Any) -> None:
    """Each request a horizontal line, admission to last token, darker from its first token."""
    requests = [r for r in timeline.requests if type(r[_REQUEST["last_token"]]) is int]
    requests.sort(
        key=lambda r: (r[_REQUEST["admitted"]] if r[_REQUEST["admitted"]] is not None else -1, r[_REQUEST["last_token"]])
    )
    if not requests:
        ax.text(0.5, 0.5, "no request rows (an in-process session)", ha="center", va="center", transform=ax.transAxes)
        return
    count = len(starts)

    def at(step: int | None, edge: list[float]) -> float:
        return edge[min(max(step or 0, 0), count - 1)]

    width = max(0.5, min(4.0, 300 / len(requests)))
    waits = [(i, at(r[_REQUEST["admitted"]], starts), at(r[_REQUEST["first_token"]], starts)) for i, r in enumerate(requests)]
    spans = [(i, at(r[_REQUEST["first_token"]], starts), at(r[_REQUEST["last_token"]], ends)) for i, r in enumerate(requests)]
    ax.hlines([i for i, *_ in waits], [a for _, a, _ in waits], [b for *_, b in waits], color="tab:cyan", linewidth=width,
              label="prefill (admitted to first token)")  # fmt: skip
    ax.hlines([i for i, *_ in spans], [a for _, a, _ in spans], [b for *_, b in spans], color="tab:blue", linewidth=width,
              label="decode (first to last token)")  # fmt: skip
    ax.set_ylabel(f"request ({len(requests)}, by admission)", fontsize=8)
    ax.set_ylim(len(requests), -1)
    ax.legend(loc="lower right", fontsize=7)


# -- one view: the timeline as Perfetto tracks ----------------------------------------------------

_COUNTERS = (("batch", "batch"), ("tokens", "produced"), ("prefill tokens", "prefill_tokens"), ("waiting", "waiting"),
             ("running", "running"))  # fmt: skip


def timeline_events(timeline: Timeline, *, pid: int, aligned: int, at: float) -> tuple[list[dict[str, Any]], list[str]]:
    """The timeline as Chrome trace events of process ``pid`` (see :mod:`profwin_traces.merge`),
    on the clock of traces whose step ``aligned`` starts at ``at`` (us): counter tracks, the
    phases and the window on lanes of their own, one slice per request on as few lanes as overlap
    allows. Returns the events and notes (why nothing was added)."""
    import heapq

    rows = timeline.steps
    if not rows:
        return [], [f"{timeline.paths[0]}: an empty timeline; not merged"]
    if not 0 <= aligned < len(rows):
        return [], [f"{timeline.paths[0]}: holds steps 0:{len(rows)}, not step {aligned} the traces are aligned on; not merged"]
    shift = at - (rows[aligned][_STEP["start_us"]] or 0)
    starts = [(r[_STEP["start_us"]] or 0) + shift for r in rows]
    ends = [s + (r[_STEP["dur_us"]] or 0) for s, r in zip(starts, rows, strict=True)]
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"timeline: {timeline.label}"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
    ]
    for name, field in _COUNTERS:
        index, last = _STEP[field], None
        for start, row in zip(starts, rows, strict=True):
            value = row[index]
            if value is not None and value != last:
                events.append({"ph": "C", "name": name, "pid": pid, "tid": 0, "ts": round(start, 3), "args": {name: value}})
                last = value
    lanes = [(1, "phases"), (2, "window")]
    analysis = analyze(timeline)
    for phase in analysis.phases:
        if phase.steps:
            a, b = (int(v) for v in phase.steps.split(":"))
            events.append(_slice(pid, 1, phase.name, starts[a], ends[b - 1], {"steps": phase.steps}))
    window = timeline.window_steps
    if window is not None and window.start < len(rows):
        last_step = len(rows) - 1 if window.end is None else min(window.end, len(rows)) - 1
        name = f"window {analysis.window or ''} (steps {window})".replace("  ", " ")
        events.append(_slice(pid, 2, name, starts[window.start], ends[last_step], {"steps": str(window)}))
    free: list[tuple[float, int]] = []  # (free from, lane)
    count = len(rows)
    requests = sorted(
        (r for r in timeline.requests if type(r[_REQUEST["last_token"]]) is int),
        key=lambda r: r[_REQUEST["admitted"]] if type(r[_REQUEST["admitted"]]) is int else -1,
    )
    used = 0
    for r in requests:
        first = r[_REQUEST["admitted"]] if type(r[_REQUEST["admitted"]]) is int else 0
        begin, end = starts[min(max(first, 0), count - 1)], ends[min(r[_REQUEST["last_token"]], count - 1)]
        if free and free[0][0] <= begin:
            _, lane = heapq.heappop(free)
        else:
            used += 1
            lane = 2 + used
        heapq.heappush(free, (end, lane))
        args = {field: r[_REQUEST[field]] for field in REQUEST_FIELDS}
        events.append(_slice(pid, lane, f"request {r[_REQUEST['id']]}", begin, end, args))
    lanes += [(2 + k, f"requests {k}") for k in range(1, used + 1)]
    events[2:2] = [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
        for tid, name in [(0, "counters"), *lanes]
    ]
    return events, []


def _slice(pid: int, tid: int, name: str, begin: float, end: float, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": "profwin.timeline", "pid": pid, "tid": tid, "ts": round(begin, 3),
            "dur": round(max(end - begin, 0.0), 3), "args": args}  # fmt: skip
