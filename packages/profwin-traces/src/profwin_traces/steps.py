"""Steps: which events of a trace are step markers, and how the steps are numbered.

The markers come from the registry (:func:`profwin.plugin.step_markers`): torch's
``ProfilerStep#k`` from core, and each installed engine plugin's (vLLM's
``execute_context_…`` annotations, SGLang's ``step[…]`` spans). Only host-side complete events
count: GPU-side copies of annotations (category ``gpu_user_annotation``) trail their host step
and would make steps overlap. A trace cut by :func:`profwin_traces.trim` records the number of
its first step (top-level key ``profwin.first_step``), so order-numbered steps keep their
numbers across a trim. When a trace holds several producers' markers, the most preferred wins
(torch, then vLLM, then SGLang).

When markers of one number appear on several processes (a merged multi-rank trace), the step is
their union: from the earliest start to the latest end. Order numbering is per process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from profwin.plugin import ConfigError, StepMarker, Window, shown, step_markers
from profwin_traces.reader import TraceError
from profwin_traces.tokens import TOKENS_MARKER, TOKENS_PREFIX

__all__ = ["MarkerMatcher", "Step", "as_window", "marker_spans", "number_steps", "select_steps"]

_MAX_PLAIN_NAMES = 1 << 16  # names remembered as "not a marker"; beyond, each is matched again
_MAX_PLAIN_CHARS = 256  # longer names are matched each time rather than remembered


class MarkerMatcher:
    """Tells which producer's step marker an event name is, or whether it is a step's
    ``profwin.tokens`` annotation (:data:`~profwin_traces.tokens.TOKENS_MARKER`, which the scan
    keeps apart); cheap enough for every event."""

    def __init__(self, markers: Sequence[StepMarker] | None = None) -> None:
        self.markers = tuple(step_markers() if markers is None else markers)
        self.plain: set[str] = set()
        """Names known not to be markers (callers may test it first: it is the fast path)."""

    def match(self, name: str, category: object) -> StepMarker | None:
        """The marker ``name`` is, or ``None``; events of a ``gpu_*`` category never are."""
        if name in self.plain or (isinstance(category, str) and category.startswith("gpu_")):
            return None
        for marker in self.markers:
            if marker.regex.match(name):
                return marker
        if name.startswith(TOKENS_PREFIX):
            return TOKENS_MARKER
        if len(self.plain) < _MAX_PLAIN_NAMES and len(name) <= _MAX_PLAIN_CHARS:
            self.plain.add(name)
        return None


@frozen
class Step:
    """One step found in a trace: ``[start, end)`` in the trace's microseconds."""

    number: int
    start: float
    end: float
    label: str
    """The marker's name (for vLLM and SGLang it carries the batch shape)."""

    @property
    def dur(self) -> float:
        """Wall time of the step in microseconds."""
        return self.end - self.start


Marker = tuple[Any, str, float, float, int]
"""``(pid, name, start, end, number)`` of one marker event (number -1 for order-numbered markers)."""


def number_steps(markers: Mapping[StepMarker, Sequence[Marker]], *, first_step: int = 0) -> tuple[str | None, list[Step]]:
    """Pick the producer (see the module docstring) and turn its markers into numbered steps."""
    found = [m for m, events in markers.items() if events]
    if not found:
        return None, []
    chosen = min(found, key=lambda m: (m.preference, m.producer))
    spans: dict[int, list[Any]] = {}
    for number, (_, name, start, end, _) in _numbered(chosen, markers[chosen], first_step):
        span = spans.get(number)
        if span is None:
            spans[number] = [start, end, name]
        else:
            span[0], span[1] = min(span[0], start), max(span[1], end)
    steps = [Step(number, start, end, name) for number, (start, end, name) in sorted(spans.items())]
    return chosen.producer, steps


def marker_spans(
    markers: Mapping[StepMarker, Sequence[Marker]], producer: str, *, first_step: int = 0
) -> list[tuple[int, Any, float, float]]:
    """``(number, pid, start, end)`` of each of ``producer``'s markers, numbered as
    :func:`number_steps` numbers them: where each process's steps are."""
    return [
        (number, found[0], found[2], found[3])
        for marker, events in markers.items()
        if marker.producer == producer
        for number, found in _numbered(marker, events, first_step)
    ]


def _numbered(marker: StepMarker, markers: Iterable[Marker], first_step: int) -> Iterable[tuple[int, Marker]]:
    if marker.numbering == "number":
        for found in markers:
            yield found[4], found
        return
    by_process: dict[Any, list[Marker]] = {}
    for found in markers:
        by_process.setdefault(found[0], []).append(found)
    for group in by_process.values():
        group.sort(key=lambda m: m[2])
        yield from enumerate(group, start=first_step)


def select_steps(
    steps: Sequence[Step], window: Window | None, *, path: str | Path, producer: str | None, searched: Sequence[StepMarker]
) -> list[Step]:
    """The steps of ``window`` (all of them for ``None``); a window reaching past the trace is
    clipped to it, one that holds none of its steps is a :class:`TraceError`. ``searched``: the
    markers looked for, named when none was found."""
    if not steps:
        raise TraceError(path, no_markers_reason(searched))
    if window is None:
        return list(steps)
    chosen = [s for s in steps if window.contains(s.number)]
    if not chosen:
        raise TraceError(
            path,
            f"window {window} is outside the trace: it holds {producer} steps {_ranges([s.number for s in steps])}",
        )
    return chosen


def no_markers_reason(searched: Sequence[StepMarker]) -> str:
    """Why a trace without step markers cannot be read by step, and what writes them."""
    shown = "; ".join(f"{m.producer}: {m.pattern}" for m in searched)
    return (
        f"no step markers found (looked for host-side complete events whose name matches, {shown}). "
        "Without them the trace has no steps to summarize, compare or trim. torch.profiler writes "
        "ProfilerStep#<k> only when it runs with a schedule and prof.step() is called each step "
        "(profwin.Session and profwin demo do); engines write theirs when profiled by profwin"
    )


def _ranges(numbers: Sequence[int]) -> str:
    """``[2, 3, 4, 7]`` as ``'2..4, 7'``."""
    parts, run = [], [numbers[0], numbers[0]]
    for n in numbers[1:]:
        if n == run[1] + 1:
            run[1] = n
            continue
        parts.append(run)
        run = [n, n]
    parts.append(run)
    return ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in parts)


def as_window(window: object) -> Window | None:
    """Accept a :class:`Window`, text like ``"20:80"`` or ``None``: steps, as a trace numbers them
    (a token window's trace numbers its steps by session step too; pick them by those numbers)."""
    if isinstance(window, str):
        window = Window.parse(window)
    if window is not None and not isinstance(window, Window):
        raise ConfigError(f"window must be a profwin.Window, text like '20:80' or None (got {shown(window)})", path="window")
    if window is not None and window.in_tokens:
        raise ConfigError(
            f"the trace tools pick steps, by the numbers the trace gives them (got {window}): a token window's trace "
            "numbers its steps by session step, and `profwin summarize` shows which tokens each held; give those steps",
            path="window",
        )
    return window
