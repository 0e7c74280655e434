"""A long window's part traces (:mod:`profwin.parts`) read as one trace.

A part is recognised by its provenance: a ``part`` number beside the ``session``, ``rank`` and
``window`` it belongs to. :func:`join_parts` puts a window's parts together in part order (the
order of their names too, up to part 9999; :func:`profwin_traces.ranks.window_parts` for files); :func:`profwin_traces.summarize`,
:func:`~profwin_traces.trim`, :func:`~profwin_traces.diff` and the per-rank and Ray summaries
then read them as one trace (:func:`profwin_traces.indexing.scan` indexes them in one pass), and
:func:`check_steps` proves the steps they hold are consecutive: a part given twice, one left
out, or a step in two parts is a :class:`TraceError` naming the steps.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from profwin.plugin import ConfigError, checked, shown
from profwin_traces.reader import TraceError

if TYPE_CHECKING:
    from profwin_traces.scan import TraceIndex


@runtime_checkable
class PartFacts(Protocol):
    """What :func:`join_parts` reads of a trace (:class:`profwin_traces.TraceFacts` has it)."""

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

__all__ = ["PartFacts", "check_numbers", "check_steps", "gaps", "join_parts", "number_runs"]


@checked
def join_parts(facts: Sequence[_F]) -> list[tuple[_F, ...]]:
    """``facts`` with each window's parts joined, in part order, where its first one was; every
    other trace alone. A trace whose facts say it cannot be read (``problem``, as
    :func:`~profwin_traces.trace_facts` finds it) is a :class:`TraceError` saying what is wrong
    with it; so is a part number given twice (copies), or missing between two given. Work and
    messages are bounded by the number of facts given, never by the part numbers they hold
    (parts 1 and 10**18 are two numbers, not a range to list)."""
    read = [_read(f, i) for i, f in enumerate(facts)]
    for path, *_, problem in read:
        if problem:
            raise TraceError(path, problem)
    order: list[_F | tuple[str, int | None, str]] = []
    windows: dict[tuple[str, int | None, str], list[tuple[int, _F]]] = {}
    for f, (_, rank, session, window, part, _) in zip(facts, read, strict=True):
        if part is None or session is None or window is None:
            order.append(f)
            continue
        key = (session, rank, window)
        if key not in windows:
            windows[key] = []
            order.append(key)
        windows[key].append((part, f))
    for (session, rank, window), parts in windows.items():
        parts.sort(key=lambda pair: pair[0])
        numbers = [n for n, _ in parts]
        where = f"window {_said(window)} (rank {rank}, session {_said(session)})"
        for (a, fa), (b, fb) in itertools.pairwise(parts):
            if a == b:
                raise TraceError(_path(fa), f"part {a} of {where} is also {_path(fb)}")
        missing = numbers[-1] - numbers[0] + 1 - len(numbers)
        if missing:
            raise TraceError(
                _path(parts[0][1]),
                f"{where} is given as parts {number_runs(numbers)}: {missing:,} part(s) missing between them "
                f"({number_runs(gaps(numbers))}); give every part (or their folder)",
            )
    return [tuple(f for _, f in windows[u]) if isinstance(u, tuple) else (u,) for u in order]


_SAID_CHARS = 80
"""As long as an error quotes a value whole (profwin's ``shown``)."""


def _said(text: str) -> str:
    """A window or session id from a file, as it is when short and printable, else quoted and cut."""
    return text if len(text) <= _SAID_CHARS and text.isprintable() else shown(text)


def _path(f: PartFacts) -> str:
    return str(f.path)


def _read(f: object, i: int) -> tuple[str, int | None, str | None, str | None, int | None, str | None]:
    """What :func:`join_parts` needs of ``facts[i]``, each attribute read once and typed: a value
    that is not a trace's facts, or an attribute that raises, is a :class:`ConfigError` naming it."""
    values: dict[str, Any] = {}
    for name, kind in (("path", str), ("rank", int), ("session", str), ("window", str), ("part", int), ("problem", str)):
        try:
            value = getattr(f, name, None) if name == "problem" else getattr(f, name)
        except AttributeError:
            raise ConfigError(
                f"must have a trace's path, rank, session, window and part (got {shown(f)})", path=f"facts[{i}]"
            ) from None
        except Exception as exc:  # a property of the caller's that raises: still one of profwin's errors
            raise ConfigError(f"cannot be read: {type(exc).__name__}: {shown(str(exc))}", path=f"facts[{i}].{name}") from None
        if name == "path" and isinstance(value, os.PathLike):
            value = os.fspath(value)
        if value is None and name != "path":
            values[name] = None
            continue
        if isinstance(value, bool) or not isinstance(value, kind) or (isinstance(value, int) and value < 0):
            rule = "a str" if kind is str else "an int >= 0"
            raise ConfigError(
                f"must be {rule}{'' if name == 'path' else ' or None'} (got {shown(value)})", path=f"facts[{i}].{name}"
            )
        values[name] = value
    return values["path"], values["rank"], values["session"], values["window"], values["part"], values["problem"]


def gaps(numbers: Sequence[int]) -> list[int | tuple[int, int]]:
    """The numbers missing between the first and the last of ``numbers`` (sorted, each once), as
    single numbers and ``(first, last)`` runs: as many items as there are holes, never one per
    missing number."""
    found: list[int | tuple[int, int]] = []
    for a, b in itertools.pairwise(numbers):
        if b == a + 2:
            found.append(a + 1)
        elif b > a + 2:
            found.append((a + 1, b - 1))
    return found


def number_runs(numbers: Sequence[int | tuple[int, int]], *, shown_runs: int = 5) -> str:
    """``numbers`` (sorted; single numbers or ``(first, last)`` runs) as ``1..3, 7, 9..12``, at
    most ``shown_runs`` runs and then how many more: bounded text for any count of numbers."""
    runs: list[tuple[int, int]] = []
    for n in numbers:
        a, b = n if isinstance(n, tuple) else (n, n)
        if runs and a == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], b)
        else:
            runs.append((a, b))
    text = ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in runs[:shown_runs])
    return text + (f", … ({len(runs) - shown_runs:,} more runs)" if len(runs) > shown_runs else "")


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
        held = sorted(counts)
        raise TraceError(
            path,
            f"the parts given hold steps {held[0]}..{held[-1]} but not {number_runs(gaps(held), shown_runs=1)} "
            f"({missing:,} step(s)): a part left out?",
        )
