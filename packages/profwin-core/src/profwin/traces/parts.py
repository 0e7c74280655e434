"""A long window's part traces (:mod:`profwin.parts`) read as one trace.

A part is recognised by its provenance: a ``part`` number beside the ``session``, ``rank`` and
``window`` it belongs to. :func:`join_parts` puts a window's parts together in part order (the
order of their names too, up to part 9999; :func:`profwin.traces.ranks.window_parts` for files); :func:`profwin.traces.summarize`,
:func:`~profwin.traces.trim`, :func:`~profwin.traces.diff` and the per-rank and Ray summaries
then read them as one trace (:func:`profwin.traces.indexing.scan` indexes them in one pass), and
:func:`check_steps` proves the steps they hold are consecutive: a part given twice, one left
out, or a step in two parts is a :class:`TraceError` naming the steps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from profwin.arguments import checked
from profwin.errors import ConfigError, shown
from profwin.traces.reader import TraceError

if TYPE_CHECKING:
    from profwin.traces.scan import TraceIndex


@runtime_checkable
class PartFacts(Protocol):
    """What :func:`join_parts` reads of a trace (:class:`profwin.traces.TraceFacts` has it)."""

    @property
    def path(self) -> str: ...
    @property
    def rank(self) -> int | None: ...
    @property
    def session(self) -> str | None: ...
    @property
    def window(self) -> str | None: ...
    @property
    def part(self) -> int | None: ...


_F = TypeVar("_F", bound=PartFacts)

__all__ = ["PartFacts", "check_numbers", "check_steps", "join_parts"]


@checked
def join_parts(facts: Sequence[_F]) -> list[tuple[_F, ...]]:
    """``facts`` with each window's parts joined, in part order, where its first one was; every
    other trace alone. A part number given twice (copies), or missing between two given, is a
    :class:`TraceError`."""
    for i, f in enumerate(facts):
        if not isinstance(f, PartFacts):
            raise ConfigError(f"must have a trace's path, rank, session, window and part (got {shown(f)})", path=f"facts[{i}]")
    units: list[list[_F]] = []
    windows: dict[tuple[str, int | None, str], list[_F]] = {}
    for f in facts:
        if f.part is None or f.session is None or f.window is None:
            units.append([f])
            continue
        key = (f.session, f.rank, f.window)
        if key not in windows:
            windows[key] = []
            units.append(windows[key])
        windows[key].append(f)
    for (session, rank, window), parts in windows.items():
        parts.sort(key=lambda f: f.part or 0)
        numbers = [f.part or 0 for f in parts]  # every one has a part number (see above)
        twice = sorted(n for n, k in Counter(numbers).items() if k > 1)
        if twice:
            paths = [f.path for f in parts if f.part == twice[0]]
            raise TraceError(paths[0], f"part {twice[0]} of window {window} (rank {rank}, session {session}) is also {paths[1]}")
        missing = sorted(set(range(numbers[0], numbers[-1] + 1)) - set(numbers))
        if missing:
            raise TraceError(
                parts[0].path,
                f"window {window} (rank {rank}, session {session}) is given as parts {numbers}: part(s) {missing} "
                "missing between them; give every part (or their folder)",
            )
    return [tuple(u) for u in units]


def check_steps(index: TraceIndex) -> None:
    """For the parts of one window indexed as one: every step number once, none missing between
    the first and the last (:func:`check_numbers`)."""
    if index.parts:
        check_numbers(index.path, [index])


def check_numbers(path: str | Path, indexes: Sequence[TraceIndex]) -> None:
    """The step markers of ``indexes`` (one window's parts, indexed together or one by one) hold
    every step number once, none missing between the first and the last; else a
    :class:`TraceError` at ``path``. Only markers that carry their step's number are checked (torch's)."""
    numbers = [m[4] for ix in indexes for marker, found in ix.markers.items() if marker.numbering == "number" for m in found]
    if not numbers:
        return
    counts = Counter(numbers)
    twice = sorted(n for n, k in counts.items() if k > 1)
    if twice:
        raise TraceError(path, f"step {twice[0]} is in two of the parts given ({len(twice)} step(s) twice): a part given twice?")
    missing = max(numbers) - min(numbers) + 1 - len(counts)
    if missing:
        gaps = sorted(set(range(min(numbers), max(numbers) + 1)) - set(counts))
        raise TraceError(
            path,
            f"the parts given hold steps {min(numbers)}..{max(numbers)} but not {_first_gap(gaps)} "
            f"({missing} step(s)): a part left out?",
        )


def _first_gap(gaps: Sequence[int]) -> str:
    end = gaps[0]
    for gap in gaps[1:]:
        if gap != end + 1:
            break
        end = gap
    return f"{gaps[0]}..{end}" if end > gaps[0] else str(gaps[0])
