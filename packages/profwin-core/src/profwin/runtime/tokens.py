"""The one rule that decides a token window inside an engine, the same on every engine.

How it works, and why: docs/internals.md, ``profwin.runtime.tokens``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from attrs import frozen

from profwin.arguments import checked
from profwin.errors import ConfigError, shown
from profwin.window import MAX_STEP, Window

__all__ = [
    "TOKENS_PREFIX",
    "TOKEN_BASE",
    "Decision",
    "StepTokens",
    "TokenRule",
    "decode_tokens",
    "encode_tokens",
    "max_steps",
    "parse_step_tokens",
    "prefill_only",
    "token_claimed",
]

TOKEN_BASE = 1 << 41
"""Offset that marks a start value as a token window's: ``TOKEN_BASE + start``. It lies past
SGLang's relative range (``2**40``..``2**41``) and far below profwin's SGLang disarm step
(``2**62``); 2**41 engine steps are never reached."""

TOKENS_PREFIX = "profwin.tokens "
"""How the name of a step's token annotation begins."""

_KEYS = ("window_step", "decoding", "token_min", "token_median", "token_max", "in_window", "prefilling", "prefill_tokens")
_OPTIONAL = frozenset({"token_min", "token_median", "token_max"})
_NUMBER = "0|[1-9][0-9]{0,17}"
# session_step, last, is optional: annotations written before it was added read as they were.
_FORM = re.compile(
    re.escape(TOKENS_PREFIX)
    + " ".join(f"{key}=({'-|' if key in _OPTIONAL else ''}{_NUMBER})" for key in _KEYS)
    + f"(?: session_step=({_NUMBER}))?"
)


@frozen
class StepTokens:
    """What one step held, from its ``profwin.tokens`` annotation (docs/internals.md)."""

    window_step: int
    decoding: int
    token_min: int | None
    token_median: int | None
    """The lower median of the decoded tokens' indices."""
    token_max: int | None
    in_window: int
    prefilling: int
    prefill_tokens: int
    session_step: int | None = None
    """The step's index in the session (steps since the start request), when the engine said."""

    def __attrs_post_init__(self) -> None:
        for key in (*_KEYS, "session_step"):
            value = getattr(self, key)
            if value is None and (key in _OPTIONAL or key == "session_step"):
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
        cls,
        window_step: int,
        tokens: Iterable[int],
        window: Window | tuple[int, int | None],
        prefilling: int,
        prefill_tokens: int,
        *,
        session_step: int | None = None,
    ) -> StepTokens:
        """A step's annotation from the response-token index of each request decoding in it
        (``tokens``), the token window (or its bounds ``(start, end)``), and its prefills."""
        window = window if isinstance(window, Window) else Window(*window)
        found = sorted(tokens)
        return cls(
            window_step=window_step,
            decoding=len(found),
            token_min=found[0] if found else None,
            token_median=found[(len(found) - 1) // 2] if found else None,
            token_max=found[-1] if found else None,
            in_window=sum(1 for k in found if window.contains(k)),
            prefilling=prefilling,
            prefill_tokens=prefill_tokens,
            session_step=session_step,
        )

    def span_name(self) -> str:
        """The ``record_function`` name that carries this annotation."""
        values = (getattr(self, key) for key in _KEYS)
        name = TOKENS_PREFIX + " ".join(f"{key}={'-' if v is None else v}" for key, v in zip(_KEYS, values, strict=True))
        return name if self.session_step is None else f"{name} session_step={self.session_step}"


@checked
def parse_step_tokens(name: str) -> StepTokens | None:
    """The annotation a span's name carries; ``None`` when the name is not a ``profwin.tokens``
    annotation. Raises :class:`~profwin.ConfigError`, naming the value and the rule, for one that
    does not follow the form (docs/internals.md)."""
    if not name.startswith(TOKENS_PREFIX):
        return None
    match = _FORM.fullmatch(name)
    if match is None:
        raise ConfigError(
            f"{shown(name)} does not follow '{TOKENS_PREFIX}"
            + " ".join(f"{key}=N" for key in _KEYS)
            + " [session_step=N]' (these keys in this order, one space apart, non-negative ints of at most 18 digits, "
            "'-' for a token index when decoding=0)",
            path="profwin.tokens",
        )
    values = [None if v is None or v == "-" else int(v) for v in match.groups()]
    try:
        return StepTokens(*values)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ConfigError(f"{shown(name)}: {exc}", path="profwin.tokens") from None


Decision = Literal["skip", "open", "record", "close"]
"""What an engine does before a step: leave the profiler off, start it, keep it, stop it."""


def max_steps(window: Window) -> int | None:
    """The most steps with a token of the window that a token window records: its length twice
    (``None`` when open-ended). Prefill-only steps between them are bounded by the same number."""
    return None if window.length is None else 2 * window.length


def prefill_only(produced: Sequence[int]) -> bool:
    """Whether a step that produces the tokens ``produced`` (their indices) decodes nothing: each
    is some request's token 0, or there is none (a prefill chunk)."""
    return all(index == 0 for index in produced)


@checked
def encode_tokens(window: Window) -> tuple[int, int]:
    """``(start value, count)`` an engine plugin reads back with :func:`decode_tokens`: the start offset
    by :data:`TOKEN_BASE`, the count the window's length (0 when open-ended)."""
    return TOKEN_BASE + window.start, window.length or 0


@checked
def token_claimed(start: object) -> bool:
    """Whether a start value lies in the range token windows own (``TOKEN_BASE`` up to twice
    it): an engine plugin refuses one there that :func:`decode_tokens` does not read, rather than arm a
    step no engine reaches."""
    return isinstance(start, int) and not isinstance(start, bool) and TOKEN_BASE <= start < 2 * TOKEN_BASE


@checked
def decode_tokens(start: object, count: object) -> Window | None:
    """The token window :func:`encode_tokens` made, or ``None`` for any other values."""
    if isinstance(start, bool) or not isinstance(start, int) or not TOKEN_BASE <= start < TOKEN_BASE + (1 << 31):
        return None
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return None
    first = start - TOKEN_BASE
    if first + count > MAX_STEP:
        return None  # encode_tokens never makes these: no window ends past MAX_STEP
    return Window(first, first + count if count else None, unit="tokens")


@checked
class TokenRule:
    """The token-window rule for one session on one engine rank (docs/internals.md).

    Call :meth:`step` once per engine step, before the step runs, with the response-token index
    of every token the step produces; it returns what to do with the profiler. Cheap: one pass
    over the step's tokens, no allocation beyond a counter while waiting.

    Attributes:
        window: the token window.
        steps: steps seen since the session's start request (the session step of the next one).
        opened_at: the session step the recording opened at (``None`` until it opens).
        recorded: steps recorded so far.
        held: of those, the prefill-only steps recorded without a token of the window.
        state: ``waiting``, ``recording`` or ``closed``.
    """

    __slots__ = ("_cap", "held", "opened_at", "recorded", "state", "steps", "window")

    def __init__(self, window: Window) -> None:
        self.window = window
        self._cap = max_steps(window)
        self.steps = 0
        self.opened_at: int | None = None
        self.recorded = 0
        self.held = 0
        self.state: Literal["waiting", "recording", "closed"] = "waiting"

    def _any_inside(self, produced: Sequence[int]) -> bool:
        start, end = self.window.start, self.window.end
        if end is None:
            return any(index >= start for index in produced)
        return any(start <= index < end for index in produced)

    def skip_below(self, highest: int) -> bool:
        """While waiting: count a step whose tokens all have indices at most ``highest`` without
        looking at them, when that is below the window's start (``False``: call :meth:`step`).
        What lets an engine check a step in the time of one ``max()`` until its window nears."""
        if self.state != "waiting" or highest >= self.window.start:
            return False
        self.steps += 1
        return True

    def step(self, produced: Sequence[int], decodes: bool | None = None) -> Decision:
        """What to do before the step that produces the tokens ``produced`` (their indices).
        ``decodes``: whether a request decodes in it, from an engine that knows which of its
        requests prefill: a request recomputed after a preemption or retraction produces its
        token ``k`` from a prefill. By default a step decodes when a token is past its request's
        first (:func:`prefill_only`)."""
        step, self.steps = self.steps, self.steps + 1
        if self.state == "closed":
            return "skip"
        inside = self._any_inside(produced)
        if self.state == "waiting":
            if not inside:
                return "skip"
            self.state, self.opened_at, self.recorded = "recording", step, 1
            return "open"
        cap = self._cap
        if inside:
            if cap is not None and self.recorded - self.held >= cap:
                self.state = "closed"
                return "close"
        elif decodes or (decodes is None and not prefill_only(produced)) or (cap is not None and self.held >= cap):
            self.state = "closed"
            return "close"
        else:
            self.held += 1
        self.recorded += 1
        return "record"
