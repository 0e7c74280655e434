"""What each step held: the ``profwin.tokens`` annotation of a step, written and read in one place.

A token window (profwin's engine plugins follow each step's requests) annotates every step it
records with a host-side span, a torch ``record_function``, whose name says what the step held::

    profwin.tokens window_step=3 decoding=8 token_min=20 token_median=23 token_max=27 in_window=8 prefilling=1 prefill_tokens=47

``window_step`` is the step's index inside the token window (0-based); ``decoding`` the requests
that produce a response token in the step; ``token_min``/``token_median``/``token_max`` the
smallest, lower median and largest index of those tokens (``-`` when no request decodes);
``in_window`` how many of those indices lie in the window; ``prefilling`` the requests with
prompt tokens in the step and ``prefill_tokens`` those prompt tokens. Keys in this order, one
space apart, non-negative ints.

The span encloses the engine's own step span (vLLM's ``execute_context_…``, SGLang's
``step[…]``) or sits next to it on the same thread, within the step. :func:`step_tokens` gives
each step its annotation: the step marker of the span's process that it overlaps longest, or,
overlapping none, the last one that began before it (so an annotation written after its step's
span, with nothing in between, belongs to that step).

:meth:`StepTokens.span_name` writes the name and :func:`parse_step_tokens` reads it back: an
engine plugin (through :mod:`profwin.plugin`) and the trace tools share this one rule.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from typing import Any

from attrs import frozen

from profwin.errors import ConfigError, shown
from profwin.markers import StepMarker

__all__ = ["TOKENS_MARKER", "TOKENS_PREFIX", "StepTokens", "parse_step_tokens", "step_tokens"]

TOKENS_PREFIX = "profwin.tokens "
"""How the name of a step's token annotation begins."""

TOKENS_MARKER = StepMarker(producer="profwin.tokens", pattern=re.escape(TOKENS_PREFIX), numbering="order", preference=1 << 30)
"""The annotation, as the trace scan looks for it beside the step markers (never a step marker
itself: the scan keeps these spans apart, per process)."""

_KEYS = ("window_step", "decoding", "token_min", "token_median", "token_max", "in_window", "prefilling", "prefill_tokens")
_OPTIONAL = frozenset({"token_min", "token_median", "token_max"})
_FORM = re.compile(
    re.escape(TOKENS_PREFIX) + " ".join(f"{key}=({'-|' if key in _OPTIONAL else ''}0|[1-9][0-9]{{0,17}})" for key in _KEYS)
)


@frozen
class StepTokens:
    """What one step held, from its ``profwin.tokens`` annotation (see the module)."""

    window_step: int
    decoding: int
    token_min: int | None
    token_median: int | None
    """The lower median of the decoded tokens' indices."""
    token_max: int | None
    in_window: int
    prefilling: int
    prefill_tokens: int

    def __attrs_post_init__(self) -> None:
        for key in _KEYS:
            value = getattr(self, key)
            if value is None and key in _OPTIONAL:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"must be a non-negative int (got {shown(value)})", path=key)
        tokens = (self.token_min, self.token_median, self.token_max)
        if self.decoding == 0 and tokens != (None, None, None):
            raise ConfigError(f"must all be '-' (None) when decoding=0 (got {shown(tokens)})", path="token_min/median/max")
        if self.decoding and None in tokens:
            raise ConfigError(
                f"must all be ints when decoding={self.decoding} (got {shown(tokens)})", path="token_min/median/max"
            )
        if self.decoding and not (self.token_min <= self.token_median <= self.token_max):  # type: ignore[operator]
            raise ConfigError(
                f"must hold token_min <= token_median <= token_max (got {shown(tokens)})", path="token_min/median/max"
            )
        if self.in_window > self.decoding:
            raise ConfigError(f"must be at most decoding={self.decoding} (got {self.in_window})", path="in_window")
        if (self.prefilling == 0) != (self.prefill_tokens == 0) or self.prefill_tokens < self.prefilling:
            raise ConfigError(
                f"must be at least prefilling={self.prefilling}, and 0 only when it is (got {self.prefill_tokens})",
                path="prefill_tokens",
            )

    @classmethod
    def of(
        cls, window_step: int, tokens: Iterable[int], window: tuple[int, int], prefilling: int, prefill_tokens: int
    ) -> StepTokens:
        """A step's annotation from the response-token index of each request decoding in it
        (``tokens``), the token window ``[start, end)``, and its prefills."""
        found = sorted(tokens)
        start, end = window
        return cls(
            window_step=window_step,
            decoding=len(found),
            token_min=found[0] if found else None,
            token_median=found[(len(found) - 1) // 2] if found else None,
            token_max=found[-1] if found else None,
            in_window=sum(1 for k in found if start <= k < end),
            prefilling=prefilling,
            prefill_tokens=prefill_tokens,
        )

    def span_name(self) -> str:
        """The ``record_function`` name that carries this annotation."""
        values = (getattr(self, key) for key in _KEYS)
        return TOKENS_PREFIX + " ".join(f"{key}={'-' if v is None else v}" for key, v in zip(_KEYS, values, strict=True))


def parse_step_tokens(name: str) -> StepTokens | None:
    """The annotation a span's name carries; ``None`` when the name is not a ``profwin.tokens``
    annotation. Raises :class:`~profwin.ConfigError`, naming the value and the rule, for one that
    does not follow the form (the module docstring)."""
    if not name.startswith(TOKENS_PREFIX):
        return None
    match = _FORM.fullmatch(name)
    if match is None:
        raise ConfigError(
            f"{shown(name)} does not follow '{TOKENS_PREFIX}"
            + " ".join(f"{key}=N" for key in _KEYS)
            + "' (these keys in this order, one space apart, non-negative ints of at most 18 digits, "
            "'-' for a token index when decoding=0)",
            path="profwin.tokens",
        )
    values = [None if v == "-" else int(v) for v in match.groups()]
    try:
        return StepTokens(*values)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ConfigError(f"{shown(name)}: {exc}", path="profwin.tokens") from None


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
