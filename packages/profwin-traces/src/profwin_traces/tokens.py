"""Which step of a trace each ``profwin.tokens`` annotation belongs to (what each step held).

The annotation's form (:class:`~profwin.runtime.tokens.StepTokens`, written by its ``span_name`` and
read by :func:`~profwin.runtime.tokens.parse_step_tokens`) lives with the token-window rule in
:mod:`profwin.runtime.tokens`; the trace tools read it from there.

The span encloses the engine's own step span (vLLM's ``execute_context_…``) or sits next to it on
the same thread, within the step (SGLang's ``step[…]``). :func:`step_tokens` gives each step its
annotation: the step marker of the span's process that it overlaps longest, or, overlapping none,
the last one that began before it (so an annotation written after its step's span, with nothing
in between, belongs to that step).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from typing import Any

from profwin.plugin import ConfigError, StepMarker
from profwin.plugin.engines import StepTokens
from profwin.plugin.files import TOKENS_PREFIX, parse_step_tokens

__all__ = ["TOKENS_MARKER", "TOKENS_PREFIX", "StepTokens", "parse_step_tokens", "step_tokens"]

TOKENS_MARKER = StepMarker(producer="profwin.tokens", pattern=re.escape(TOKENS_PREFIX), numbering="order", preference=1 << 30)
"""The annotation, as the trace scan looks for it beside the step markers (never a step marker
itself: the scan keeps these spans apart, per process)."""


Span = tuple[Any, float, float, str]
"""``(pid, start, end, name)`` of one ``profwin.tokens`` span."""


def step_tokens(
    spans: Sequence[Span], markers: Iterable[tuple[int, Any, float, float]]
) -> tuple[dict[int, StepTokens], list[str]]:
    """Each step's annotation, by step number, and notes on spans that were not used.

    ``markers``: ``(number, pid, start, end)`` of each step marker. A span goes to the marker of
    its process that it overlaps longest; one that overlaps none goes to the step its process
    was in when it began, the last marker that started at or before it (as every event is placed
    in a step), or the first marker when it began before them all. A step annotated twice keeps
    its first span (one that says the same, from another process of a merged trace, is no
    conflict). Spans of a process without markers and spans whose name does not parse are
    left out, and annotations whose ``window_step`` does not advance with the steps are named:
    the notes say so."""
    by_process: dict[Any, list[tuple[float, float, int]]] = {}
    for number, pid, start, end in markers:
        by_process.setdefault(pid, []).append((start, end, number))
    starts = {}
    for pid, found_markers in by_process.items():
        found_markers.sort()
        starts[pid] = [m[0] for m in found_markers]
    found: dict[int, StepTokens] = {}
    refused: list[str] = []
    offsets: dict[Any, set[int]] = {}
    unplaced = twice = 0
    for pid, start, end, name in spans:
        try:
            tokens = parse_step_tokens(name)
        except ConfigError as exc:
            refused.append(exc.reason)
            continue
        own = by_process.get(pid)
        if tokens is None or not own:
            unplaced += 1
            continue
        at = _placed(own, starts[pid], start, end)
        number = own[at][2]
        offsets.setdefault(pid, set()).add(at - tokens.window_step)
        if number in found:
            twice += found[number] != tokens  # the same on another process (a merged trace's ranks): one annotation
            continue
        found[number] = tokens
    notes = []
    if refused:
        notes.append(
            f"{len(refused)} profwin.tokens spans do not follow the annotation's form and are left out; the first: {refused[0]}"
        )
    if unplaced:
        notes.append(f"{unplaced} profwin.tokens spans are on a process without step markers and are left out")
    if twice:
        notes.append(f"{twice} profwin.tokens spans fall on a step annotated otherwise already; each step keeps its first")
    if any(len(o) > 1 for o in offsets.values()):
        notes.append(
            "the profwin.tokens annotations' window_step does not advance one for one with the steps: some annotation "
            "sits outside its step (write it around the step's span, or after it)"
        )
    return found, notes


def _placed(markers: Sequence[tuple[float, float, int]], starts: Sequence[float], start: float, end: float) -> int:
    """The index of the marker (sorted by start; ``starts`` theirs) a span ``[start, end)`` belongs to."""
    best, overlap = -1, 0.0
    i = bisect.bisect_left(starts, end) - 1  # the markers starting before the span ends, latest first
    while i >= 0 and markers[i][1] > start:
        shared = min(end, markers[i][1]) - max(start, markers[i][0])
        if shared > overlap or best < 0:
            best, overlap = i, shared
        i -= 1
    if best >= 0:
        return best
    return max(bisect.bisect_right(starts, start) - 1, 0)
