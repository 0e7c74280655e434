"""The one rule that decides a token window inside an engine, the same on every engine.

A window in tokens (``Window(20, 80, unit="tokens")``) names response-token indices: token *k*
of a request is the *k*-th token it generates, token 0 coming from its last prefill step. An
engine counts batches, and chunked prefill and staggered admission make a batch hold requests at
very different token indices. The engine plugins (profwin-vllm's ``vllm.general_plugins`` entry,
profwin-sglang's server plugin) feed every step's requests to :class:`TokenRule`, which answers,
before the step runs, whether to start, keep, or stop recording::

                 first step that produces a token        first step that produces no token
                 with an index in [start, end)           in [start, end), or the cap reached
                            |                                          |
    step:  ... waiting ...  | open  rec  rec  rec  ...  rec  rec  rec  | closed (never reopens)
                            '------- at most max_steps(window) --------'

The rule (docs/window.md has the picture and the measurements behind it):

1. The recording opens at the first step in which some request produces a token whose index is
   in ``[start, end)``.
2. It stays open while every step produces such a token for at least one request, so the
   recorded steps are contiguous and none is recorded for nothing.
3. It closes before the first step that produces none, or once it has recorded
   :func:`max_steps` steps: ``2 * (end - start)``, the window's length plus a stagger allowance
   of the same length. The request that opened the window needs ``end - start`` steps for its
   tokens ``start..end-1``; the allowance covers the requests whose prefill finished up to
   ``end - start`` steps after it. Requests admitted later than that (more requests than the
   engine runs at once) get only those of their tokens that fall inside the recorded steps.
4. It never reopens. An open window (``end=None``) has no cap: it closes when no step produces
   a token at or past ``start``, or when the session stops.

Each recorded step is annotated in the trace (:func:`annotation`) with what it held, so
``profwin summarize`` shows it and tests count it.

Engines receive a token window as a start value and a count that no engine reaches by itself
(:func:`encode`): a plugin recognises it (:func:`decode`), and profwin sends it only to engines
that report the plugin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from profwin.markers import StepMarker
from profwin.window import Window

__all__ = [
    "ANNOTATION",
    "ANNOTATION_FIELDS",
    "MARKER",
    "TOKEN_BASE",
    "Decision",
    "TokenRule",
    "annotation",
    "decode",
    "encode",
    "max_steps",
]

TOKEN_BASE = 1 << 41
"""Offset that marks a start value as a token window's: ``TOKEN_BASE + start``. It lies past
SGLang's relative range (``2**40``..``2**41``) and far below profwin's SGLang disarm step
(``2**62``); 2**41 engine steps are never reached."""

ANNOTATION = "profwin.tokens"
"""The name every token-window annotation begins with, followed by ``key=value`` fields."""

ANNOTATION_FIELDS: tuple[str, ...] = (
    "window_step",
    "decoding",
    "token_min",
    "token_median",
    "token_max",
    "in_window",
    "prefilling",
    "prefill_tokens",
    "session_step",
)
"""The fields of an annotation, in order: the step's index in the recording and in the session
(steps since the session's start request), how many requests produced a token in it, the min,
lower median and max of those tokens' indices (``-`` when none), how many of them lie in the
window, how many requests had prompt tokens in it, and how many prompt tokens it processed."""

MARKER = StepMarker(
    producer="profwin-tokens", pattern=r"profwin\.tokens (?:\S+ )*session_step=(\d+)$", numbering="number", preference=1
)
"""The annotations as step markers, numbered by session step: in a token window's trace they are
the steps (the engine's own markers, one per step as well, give no session number)."""

Decision = Literal["skip", "open", "record", "close"]
"""What an engine does before a step: leave the profiler off, start it, keep it, stop it."""


def max_steps(window: Window) -> int | None:
    """The most steps a token window records: its length twice (``None`` when open-ended)."""
    return None if window.length is None else 2 * window.length


def encode(window: Window) -> tuple[int, int]:
    """``(start value, count)`` an engine plugin reads back with :func:`decode`: the start offset
    by :data:`TOKEN_BASE`, the count the window's length (0 when open-ended)."""
    return TOKEN_BASE + window.start, window.length or 0


def decode(start: object, count: object) -> Window | None:
    """The token window :func:`encode` made, or ``None`` for any other values."""
    if isinstance(start, bool) or not isinstance(start, int) or not TOKEN_BASE <= start < TOKEN_BASE + (1 << 31):
        return None
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return None
    first = start - TOKEN_BASE
    return Window(first, first + count if count else None, unit="tokens")


def annotation(
    window: Window, produced: Sequence[int], *, window_step: int, session_step: int, prefilling: int, prefill_tokens: int
) -> str:
    """The name of the span around one recorded step: what the step held (:data:`ANNOTATION_FIELDS`)."""
    ordered = sorted(produced)
    inside = sum(1 for index in ordered if window.contains(index))
    if ordered:
        low, median, high = str(ordered[0]), str(ordered[(len(ordered) - 1) // 2]), str(ordered[-1])
    else:
        low = median = high = "-"
    values = (window_step, len(ordered), low, median, high, inside, prefilling, prefill_tokens, session_step)
    return " ".join([ANNOTATION, *(f"{key}={value}" for key, value in zip(ANNOTATION_FIELDS, values, strict=True))])


class TokenRule:
    """The token-window rule for one session on one engine rank (module docstring).

    Call :meth:`step` once per engine step, before the step runs, with the response-token index
    of every token the step produces; it returns what to do with the profiler. Cheap: one pass
    over the step's tokens, no allocation beyond a counter while waiting.

    Attributes:
        window: the token window.
        steps: steps seen since the session's start request (the session step of the next one).
        opened_at: the session step the recording opened at (``None`` until it opens).
        recorded: steps recorded so far.
        state: ``waiting``, ``recording`` or ``closed``.
    """

    __slots__ = ("_cap", "opened_at", "recorded", "state", "steps", "window")

    def __init__(self, window: Window) -> None:
        self.window = window
        self._cap = max_steps(window)
        self.steps = 0
        self.opened_at: int | None = None
        self.recorded = 0
        self.state: Literal["waiting", "recording", "closed"] = "waiting"

    def _any_inside(self, produced: Sequence[int]) -> bool:
        start, end = self.window.start, self.window.end
        if end is None:
            return any(index >= start for index in produced)
        return any(start <= index < end for index in produced)

    def step(self, produced: Sequence[int]) -> Decision:
        """What to do before the step that produces the tokens ``produced`` (their indices)."""
        step, self.steps = self.steps, self.steps + 1
        if self.state == "closed":
            return "skip"
        inside = self._any_inside(produced)
        if self.state == "waiting":
            if not inside:
                return "skip"
            self.state, self.opened_at, self.recorded = "recording", step, 1
            return "open"
        if not inside or (self._cap is not None and self.recorded >= self._cap):
            self.state = "closed"
            return "close"
        self.recorded += 1
        return "record"
