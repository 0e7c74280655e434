"""``summarize_ranks``: the traces of one session on many ranks, side by side, step by step.

Each trace is summarized on its own (streaming, one at a time, so memory does not grow with the
number of ranks); then each step's wall time is compared across ranks: its spread and its
slowest rank (the straggler), and per rank the median step time and how often it was slowest.

A trace's rank is its ``distributedInfo.rank`` (Kineto writes it under torch.distributed, and
profwin's torch driver always does), else the one its file name carries: profwin's and vLLM's
``…rank<k>…`` (``dp0_pp0_tp0_rank3.….pt.trace.json.gz``), SGLang's ``…-TP-<k>…``.
"""

from __future__ import annotations

import os
import re
import statistics
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from profwin.plugin import ConfigError, JsonForm, Window, checked
from profwin.plugin.files import PROVENANCE_FORMAT, PROVENANCE_KEY, SIDECAR_SUFFIX, TIMELINE, sidecar_path
from profwin_traces.parts import join_parts
from profwin_traces.provenance import file_identity, provenance, sidecar_info
from profwin_traces.reader import Progress, TraceError, read_trace
from profwin_traces.summarize import Summary, render_device, summarize

__all__ = [
    "RankRow",
    "RankStat",
    "Ranks",
    "StepSpread",
    "TraceFacts",
    "choose_session",
    "merge_ranks",
    "pick_session",
    "rank_hint",
    "rank_of",
    "render_ranks",
    "summarize_ranks",
    "trace_facts",
    "trace_files",
    "window_parts",
]

_RANK_NAMES = (re.compile(r"(?:^|[^a-z])rank[_-]?(\d{1,9})(?!\d)", re.IGNORECASE), re.compile(r"-TP-(\d{1,9})(?!\d)"))
_SUFFIXES = (".json", ".json.gz")


@frozen
class RankRow:
    """One step on one rank."""

    step: int
    rank: int
    dur_us: float


@frozen
class StepSpread:
    """One step across the ranks that ran it."""

    step: int
    ranks: int
    min_us: float
    median_us: float
    max_us: float
    spread_us: float
    """``max - min``: how long the fastest rank waits for the slowest at this step's end."""
    slowest_rank: int


@frozen
class RankStat:
    """One rank over the window."""

    rank: int
    path: str
    steps: int
    median_us: float
    total_us: float
    slowest: int
    """Steps at which this rank was the slowest (ties: the lowest rank)."""


@frozen
class Ranks(JsonForm):
    """What :func:`summarize_ranks` found; ``to_dict()`` is ``profwin summarize --json`` for many traces."""

    producer: str
    window: str | None
    ranks: tuple[RankStat, ...]
    spread: tuple[StepSpread, ...]
    rows: tuple[RankRow, ...]
    summaries: tuple[Summary, ...]
    """Each rank's own summary, by rank."""
    notes: tuple[str, ...]


def _peek(trace: str | Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The provenance of ``trace``, its top-level keys before the events (profwin writes its
    ``"profwin"`` key there, Kineto its ``distributedInfo``), without reading the events, and
    what was wrong when the trace's header or its sidecar cannot be read (the header ``{}``
    when the file cannot be read as a trace)."""
    found, problem = sidecar_info(trace)
    try:
        with read_trace(trace, fast=False) as reader:
            next(reader.raw_events(), None)
            header = dict(reader.header)
    except TraceError as exc:
        return found, {}, exc.reason
    except RuntimeError as exc:
        return found, {}, str(exc)
    inside = header.get(PROVENANCE_KEY)
    if isinstance(inside, dict):
        try:
            PROVENANCE_FORMAT.check(inside)
        except ConfigError as exc:
            problem = problem or f"its provenance ({PROVENANCE_KEY!r} key) cannot be read: {exc}"
    return provenance(trace, header), header, problem


@checked
def trace_files(paths: Iterable[str | Path]) -> list[Path]:
    """The trace files named by ``paths``: files as given, folders expanded to the ``.json`` and
    ``.json.gz`` files directly inside them (hidden ones skipped), in name order. A folder with
    none directly inside but with folders (what ``profwin collect`` writes: ``DIR/<node>/…``)
    gives the trace files under it, at any depth. Session timelines (``*.timeline.json``) and
    provenance sidecars in a folder are not traces."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        try:
            folder = path.is_dir()
        except OSError as exc:  # is_dir() answers False only for a path that is not there
            raise TraceError(path, f"cannot be looked at: {exc.strerror}") from None
        if folder:
            inside = _traces_in(path) or sorted(p for p in path.rglob("*") if _is_trace(p) and not _hidden(p, path))
            if not inside:
                raise TraceError(path, "the folder holds no .json or .json.gz trace files")
            found += inside
        else:
            found.append(path)
    return found


def _traces_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if _is_trace(p))


def _is_trace(path: Path) -> bool:
    """Named like a trace and not a folder: a FIFO, a device or a broken link named so is listed
    too, and reading it says what is wrong with it (a part that cannot be read is never taken for
    a part left out)."""
    name = path.name
    return (
        not name.startswith(".")
        and name.endswith(_SUFFIXES)
        and not name.endswith((SIDECAR_SUFFIX, TIMELINE.suffix))  # profwin's own files beside the traces
        and not path.is_dir()
    )


def _hidden(path: Path, root: Path) -> bool:
    """Whether a folder between ``root`` and ``path`` is hidden (the collector's own files)."""
    return any(part.startswith(".") for part in path.relative_to(root).parts[:-1])


@checked
def window_parts(paths: Iterable[str | Path]) -> list[tuple[Path, ...]]:
    """The traces named by ``paths`` (files or folders, as :func:`~profwin_traces.trace_files`),
    each window's parts joined (:func:`join_parts`)."""
    return [tuple(Path(f.path) for f in unit) for unit in join_parts([trace_facts(p) for p in trace_files(paths)])]


def rank_of(summary: Summary) -> int | None:
    """The trace's rank: ``distributedInfo``, else its file name, else ``None``."""
    if summary.trace.rank is not None:
        return summary.trace.rank
    name = Path(summary.trace.path).name
    for pattern in _RANK_NAMES:
        match = pattern.search(name)
        if match:
            return int(match.group(1))
    return None


def rank_hint(path: Path, origin: dict[str, Any], header: dict[str, Any]) -> int | None:
    """The rank a trace declares (distributedInfo, its provenance, its name) before summarizing it."""
    info = header.get("distributedInfo")
    for value in (info.get("rank") if isinstance(info, dict) else None, origin.get("rank")):
        if type(value) is int and value >= 0:
            return value
    for pattern in _RANK_NAMES:
        match = pattern.search(path.name)
        if match:
            return int(match.group(1))
    return None


@frozen
class TraceFacts:
    """What choosing a session knows of one trace (:func:`trace_facts`): its rank as the trace
    declares it, the session id its provenance names, and its file time. Small and picklable, so
    a node can read them where the trace lies and send them to the caller (profwin-ray)."""

    path: str
    rank: int | None
    session: str | None
    mtime_ns: int
    window: str | None = None
    """The window its provenance names."""
    part: int | None = None
    """Its number among its window's parts (:mod:`profwin.parts`); ``None``: a whole trace."""
    problem: str | None = None
    """What is wrong with it when its header or its provenance cannot be read (``None``: nothing):
    :func:`~profwin_traces.join_parts` reports it, so a part that cannot be read is never taken for
    a part left out."""


_FACTS: OrderedDict[tuple[str, Any, Any], TraceFacts] = OrderedDict()
"""Facts read in this process, by path and the :func:`~profwin_traces.provenance.file_identity` of the trace
and its sidecar: a command asks for a trace's facts up to three times (one trace or many, the
session, the parts), and each file is read once."""
_FACTS_KEPT = 4096


@checked
def trace_facts(path: str | Path) -> TraceFacts:
    """The :class:`TraceFacts` of the trace at ``path`` (its header and provenance only, not its
    events), read once while the trace and its sidecar are unchanged."""
    try:
        sidecar: Any = file_identity(sidecar_path(path))
    except ConfigError:  # a path without a file name: reading it says so
        sidecar = None
    identity = file_identity(path)
    key = (os.path.abspath(path), identity, sidecar)
    if identity is not None and key in _FACTS:
        _FACTS.move_to_end(key)
        return _FACTS[key]
    facts = _read_facts(path, 0 if identity is None else identity[4])
    if identity is not None:
        _FACTS[key] = facts
        while len(_FACTS) > _FACTS_KEPT:
            _FACTS.popitem(last=False)
    return facts


def _read_facts(path: str | Path, mtime_ns: int) -> TraceFacts:
    origin, header, problem = _peek(path)
    session, window, part = origin.get("session"), origin.get("window"), origin.get("part")
    return TraceFacts(
        path=str(path),
        rank=rank_hint(Path(path), origin, header),
        session=session if isinstance(session, str) else None,
        mtime_ns=mtime_ns,  # 0: not there (or not readable): summarizing it says so
        window=window if isinstance(window, str) else None,
        part=part if type(part) is int and part > 0 else None,
        problem=problem or None,
    )


@checked
def choose_session(facts: Sequence[TraceFacts], session: str | None = None) -> tuple[list[TraceFacts], list[str]]:
    """The traces of one profiling session among ``facts``, and a note when there was a choice.

    ``session``: the traces whose provenance names this session id (or a unique prefix of one).
    Without it, when a rank has several traces (``profwin start``/``stop`` twice into one
    folder), each rank's newest trace is taken (by file time), which is the newest session on
    every rank even when each rank's process had an id of its own. Order is kept."""
    if session is not None:
        known = sorted({f.session for f in facts if f.session is not None})
        matches = [i for i in known if i == session] or [i for i in known if i.startswith(session)]
        if not matches:
            raise ConfigError(
                f"{session!r} matches no session; the traces hold: {', '.join(known) or 'no session ids'}", path="session"
            )
        chosen = [f for f in facts if f.session in matches]
        return chosen, [f"session {', '.join(matches)}: {len(chosen)} of {len(facts)} traces"]
    # A window's parts are one trace here (they share a session, a rank and a window).
    units = join_parts(facts)
    by_rank: dict[Any, list[tuple[TraceFacts, ...]]] = {}
    for unit in units:
        f = unit[0]
        by_rank.setdefault(("path", f.path) if f.rank is None else f.rank, []).append(unit)
    if all(len(group) == 1 for group in by_rank.values()):
        return list(facts), []
    for group in by_rank.values():
        sessions = [u[0].session for u in group]
        if len(group) > 1 and (None in sessions or len(set(sessions)) < len(sessions)):
            # Not told apart by session (copies, or traces without provenance): summarizing
            # refuses the repeated rank, saying why, rather than guessing which to drop.
            return list(facts), []
    newest = [max(group, key=lambda u: max(f.mtime_ns for f in u)) for group in by_rank.values()]
    chosen = [f for f in facts if any(f is n for unit in newest for n in unit)]
    repeated = max(len(group) for group in by_rank.values())
    chosen_ids = sorted({str(f.session) for f in chosen})
    note = (
        f"up to {repeated} traces per rank here (several profiling sessions); summarizing each rank's newest "
        f"(session {', '.join(chosen_ids)}); choose another with --session ID"
    )
    return chosen, [note]


def pick_session(files: Sequence[Path], session: str | None = None) -> tuple[list[Path], list[str]]:
    """:func:`choose_session` for trace files on this disk: the files of one profiling session,
    and a note when there was a choice."""
    chosen, notes = choose_session([trace_facts(p) for p in files], session)
    keep = {f.path for f in chosen}
    return [p for p in files if str(p) in keep], notes


@checked
def summarize_ranks(
    paths: Iterable[str | Path],
    *,
    window: Window | str | None = None,
    top: int = 20,
    first_step: int | None = None,
    progress: Callable[[Path], Progress | None] | None = None,
    session: str | None = None,
) -> Ranks:
    """Summarize the traces in ``paths`` (files, or folders of them), one per rank; a long
    window's part traces (:mod:`profwin_traces.parts`) are read as its rank's one trace.

    Traces of several profiling sessions (``profwin start``/``stop`` twice into one folder):
    ``session`` picks one by its id or a prefix (:mod:`profwin.provenance`), else each
    rank's newest trace is summarized and a note says so (:func:`pick_session`). Traces without step markers (an engine's
    front-end process, say) are left out with a note. Raises :class:`TraceError` when two traces
    of one session have the same rank, when a trace's rank cannot be told, or when no trace has steps.
    """
    found: list[Summary] = []
    files, notes = pick_session(trace_files(paths), session)
    for unit in window_parts(files):
        path = unit[0]
        try:
            summary = summarize(
                unit, window=window, top=top, first_step=first_step, progress=progress(path) if progress else None
            )
        except TraceError as exc:
            if not exc.reason.startswith("no step markers"):
                raise
            notes.append(f"{path.name}: no step markers; left out")
            continue
        found.append(summary)
    if not found:
        raise TraceError(", ".join(str(p) for p in paths), "no trace with step markers")
    return merge_ranks(found, notes=notes)


@checked
def merge_ranks(found: Sequence[Summary], *, notes: Sequence[str] = ()) -> Ranks:
    """Compare per-file summaries (:func:`~profwin_traces.summarize`, one per rank) step by step:
    the merging half of :func:`summarize_ranks`, for callers that summarize the files themselves
    (elsewhere, in parallel). Each summary's rank is :func:`rank_of`'s; a rank twice, or a rank
    that cannot be told among several, is a :class:`TraceError`."""
    if not found:
        raise TraceError("", "no summaries to merge")
    notes = list(notes)
    summaries: dict[int, Summary] = {}
    for summary in found:
        path = Path(summary.trace.path)
        rank = rank_of(summary)
        if rank is None and len(found) == 1:
            rank = 0
            notes.append(f"{path.name}: no rank in the trace or its name; taken as rank 0")
        if rank is None:
            raise TraceError(
                path, "cannot tell its rank: no distributedInfo.rank in the trace and no rank<k> or -TP-<k> in its name"
            )
        if rank in summaries:
            raise TraceError(
                path,
                f"rank {rank} again: {summaries[rank].trace.path} is rank {rank} too; one trace per rank and session "
                "(traces profwin did not write carry no session id: give the files of one session, not the folder)",
            )
        summaries[rank] = summary
    by_rank = [summaries[r] for r in sorted(summaries)]
    producers = {s.producer for s in by_rank}
    if len(producers) > 1:
        notes.append(f"ranks were numbered by different markers: {sorted(producers)}")
    rows = [
        RankRow(step=st.number, rank=rank, dur_us=st.dur_us)
        for rank, s in sorted(summaries.items())
        for st in s.steps
        if st.in_window
    ]
    spread = _spread(rows)
    slowest: dict[int, int] = {}
    for sp in spread:
        slowest[sp.slowest_rank] = slowest.get(sp.slowest_rank, 0) + 1
    stats = []
    for rank, s in sorted(summaries.items()):
        durs = [st.dur_us for st in s.steps if st.in_window]
        stats.append(
            RankStat(
                rank=rank,
                path=s.trace.path,
                steps=len(durs),
                median_us=round(statistics.median(durs), 3),
                total_us=round(sum(durs), 3),
                slowest=slowest.get(rank, 0),
            )
        )
    for s in by_rank:
        notes += [f"rank {rank_of(s)}: {note}" for note in s.notes]
    return Ranks(
        producer=by_rank[0].producer,
        window=by_rank[0].window,
        ranks=tuple(stats),
        spread=tuple(spread),
        rows=tuple(rows),
        summaries=tuple(by_rank),
        notes=tuple(notes),
    )


def _spread(rows: Sequence[RankRow]) -> list[StepSpread]:
    by_step: dict[int, list[RankRow]] = {}
    for row in rows:
        by_step.setdefault(row.step, []).append(row)
    out = []
    for step, group in sorted(by_step.items()):
        durs = [r.dur_us for r in group]
        slow = max(group, key=lambda r: (r.dur_us, -r.rank))
        out.append(
            StepSpread(
                step=step,
                ranks=len(group),
                min_us=min(durs),
                median_us=round(statistics.median(durs), 3),
                max_us=max(durs),
                spread_us=round(max(durs) - min(durs), 3),
                slowest_rank=slow.rank,
            )
        )
    return out


@checked
def render_ranks(ranks: Ranks, *, max_steps: int = 40) -> str:
    """The ranks summary as text for a terminal."""
    window = "all steps" if ranks.window is None else f"window {ranks.window}"
    lines = [f"{len(ranks.ranks)} ranks, {ranks.producer} steps, {window}", ""]
    lines.append(f"{'rank':>5} {'steps':>6} {'median':>12} {'total':>12} {'slowest':>8}  trace")
    lines += [
        f"{r.rank:>5} {r.steps:>6} {r.median_us / 1000:>9.3f} ms {r.total_us / 1000:>9.3f} ms {r.slowest:>8}  {Path(r.path).name}"
        for r in ranks.ranks
    ]
    lines += ["", f"{'step':>6} {'ranks':>5} {'min':>12} {'median':>12} {'max':>12} {'spread':>12} {'slowest':>8}"]
    for sp in ranks.spread[:max_steps]:
        lines.append(
            f"{sp.step:>6} {sp.ranks:>5} {sp.min_us / 1000:>9.3f} ms {sp.median_us / 1000:>9.3f} ms "
            f"{sp.max_us / 1000:>9.3f} ms {sp.spread_us / 1000:>9.3f} ms {sp.slowest_rank:>8}"
        )
    if len(ranks.spread) > max_steps:
        lines.append(f"  ... {len(ranks.spread) - max_steps} more steps (--json lists all)")
    for s in ranks.summaries:
        if s.device is not None:
            lines += ["", render_device(s.device, f"rank {rank_of(s)}: device time in steps {s.selected}")]
    lines += [f"note  {note}" for note in ranks.notes]
    return "\n".join(lines)
