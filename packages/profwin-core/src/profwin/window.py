"""The window: a half-open range of steps counted from the start of a profiling session.

How it works, and why: docs/internals.md, ``profwin.window``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

from attrs import field, frozen

from profwin.errors import ConfigError, shown, unknown_key

__all__ = ["MAX_STEP", "UNITS", "Unit", "Window", "check_bounds", "check_unit"]

Unit = Literal["steps", "tokens"]
UNITS: tuple[str, ...] = get_args(Unit)
"""What a window counts: engine ``steps`` (the default) or response ``tokens``."""

MAX_STEP = 2**31 - 1
"""The largest window bound. Not an engine's limit: the numbers profwin sends are Python ints in
both engines, and some are far larger on purpose (a relative SGLang start is sent as
``2**40 + start``, a token window's start as ``2**41 + start``: :mod:`profwin.runtime.tokens`). The bound
keeps a window's own numbers far below those encodings, so a step number is never read as one,
and a window of 2**31 steps is already far past any rollout."""

_DIGITS = re.compile(r"[0-9]+")
_KEY_STYLES: tuple[tuple[str, str], ...] = (
    ("start", "end"),
    ("profile_token_start", "profile_token_end"),
)
# verl documents profile_token_start/end as "this response-token index": that spelling means tokens.
_STYLE_UNIT: dict[tuple[str, str], Unit] = {_KEY_STYLES[0]: "steps", _KEY_STYLES[1]: "tokens"}


def _describe(value: object) -> str:
    return f"{shown(value)} ({type(value).__name__})"


def _too_large(name: str, value: object) -> ConfigError:
    return ConfigError(
        f"{name} must be <= {MAX_STEP} (2**31 - 1, far below the numbers profwin encodes for engines; got {shown(value)})"
    )


def check_bounds(
    start: object,
    end: object,
    *,
    names: tuple[str, str] = ("start", "end"),
    path: str = "",
) -> tuple[int, int | None]:
    """Validate window bounds and return them normalised (``start=None`` becomes 0).

    This is the one rule every window in profwin passes through: each bound is ``None`` or a
    non-negative ``int`` (``bool`` is not accepted) no larger than :data:`MAX_STEP`, and
    ``end > start`` when ``end`` is set.
    ``names`` are the field names used in error messages, so a verl-style config reports
    ``profile_token_end`` rather than ``end``.
    """
    for name, value in zip(names, (start, end), strict=True):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be a non-negative int or None (got {_describe(value)})", path=path)
        if value < 0:
            raise ConfigError(f"{name} must be >= 0 (got {shown(value)})", path=path)
        if value > MAX_STEP:
            raise _too_large(name, value).at(path)
    first = 0 if start is None else start
    assert isinstance(first, int)  # narrowed above; kept for the type checker
    if end is not None:
        assert isinstance(end, int)
        if end <= first:
            raise ConfigError(f"{names[1]} must be > {names[0]} (got {names[0]}={first}, {names[1]}={end})", path=path)
    return first, end  # type: ignore[return-value]


def check_unit(unit: object, *, name: str = "unit", path: str = "") -> Unit:
    """``unit`` if it is one of :data:`UNITS`, else a :class:`ConfigError` naming it."""
    if not isinstance(unit, str) or unit not in UNITS:
        raise ConfigError(f"{name} must be one of {list(UNITS)} (got {shown(unit)})", path=path)
    return unit  # type: ignore[return-value]


@frozen(init=False)
class Window:
    """Steps ``[start, end)`` of a profiling session; ``end=None`` means until the session stops.

    With ``unit="tokens"`` the bounds are response-token indices instead (docs/internals.md).

    >>> Window(20, 80).steps_to_record
    60
    >>> str(Window.parse(" 20 : "))
    '20:'
    >>> str(Window.parse("20:80 tokens"))
    '20:80 tokens'
    """

    start: int = field()
    end: int | None = field()
    unit: Unit = field(default="steps")

    def __init__(self, start: int | None = None, end: int | None = None, *, unit: Unit = "steps") -> None:
        first, last = check_bounds(start, end)
        self.__attrs_init__(first, last, check_unit(unit))  # type: ignore[attr-defined]

    # -- construction from text and configs -------------------------------------------------

    @classmethod
    def parse(cls, text: str, *, field_name: str = "window") -> Window:
        """Parse ``"20:80"``, ``"20:"``, ``":80"`` or ``":"``, optionally followed by a space and
        a unit (``"20:80 tokens"``, ``"20:80 steps"``); spaces around parts are ignored."""
        if not isinstance(text, str):
            raise ConfigError(f"{field_name} must be text like '20:80' (got {_describe(text)})")
        unit: Unit = "steps"
        words = text.split()
        if len(words) > 1 and words[-1].isalpha():
            unit = check_unit(words[-1], name=f"{field_name} unit")
            text = text[: text.rstrip().rfind(words[-1])]
        parts = text.split(":")
        if len(parts) != 2:
            raise ConfigError(
                f"{field_name} must have exactly one ':' as in 'START:END', '20:', ':80' or ':' (got {shown(text)})"
            )
        bounds: list[int | None] = []
        for label, part in zip(("start", "end"), parts, strict=True):
            part = part.strip()
            if not part:
                bounds.append(None)
            elif _DIGITS.fullmatch(part):
                # int() of thousands of digits is slow (and refused past 4,300): compare lengths first.
                if len(part.lstrip("0")) > len(str(MAX_STEP)):
                    raise _too_large(f"{field_name} {label}", part)
                bounds.append(int(part.lstrip("0") or "0"))  # the digits that count, not a 5,000-zero prefix
            else:
                raise ConfigError(
                    f"{field_name} {label} must be a non-negative integer or empty (got {shown(part)} in {shown(text)})"
                )
        first, last = check_bounds(*bounds, names=(f"{field_name} start", f"{field_name} end"))
        return cls(first, last, unit=unit)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, path: str = "") -> Window:
        """Build a window from ``{start, end}`` or verl's ``{profile_token_start, profile_token_end}``,
        with an optional ``unit``: ``steps`` by default for ``start``/``end``, ``tokens`` for
        verl's keys (verl documents them as response-token indices).

        Mixing both spellings or passing an unknown key is an error that names the closest valid key.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"window must be a mapping with start/end (got {_describe(data)})", path=path)
        used = [style for style in _KEY_STYLES if any(key in data for key in style)]
        if len(used) > 1:
            raise ConfigError(
                f"use either start/end or profile_token_start/profile_token_end, not both (got keys {shown(sorted(data, key=str))})",
                path=path,
            )
        names = used[0] if used else _KEY_STYLES[0]
        valid = [key for style in _KEY_STYLES for key in style] + ["unit"]
        for key in data:
            if key not in (*names, "unit"):
                raise unknown_key(key, valid, path=path)
        first, last = check_bounds(data.get(names[0]), data.get(names[1]), names=names, path=path)
        unit = check_unit(data.get("unit", _STYLE_UNIT[names]), path=path)
        return cls(first, last, unit=unit)

    # -- derived values ---------------------------------------------------------------------

    @property
    def length(self) -> int | None:
        """Number of steps recorded, or ``None`` when the window is unbounded."""
        return None if self.end is None else self.end - self.start

    @property
    def steps_to_skip(self) -> int:
        """Steps run before recording begins: steps ``0..start-1`` (``start`` of them)."""
        return self.start

    @property
    def steps_to_record(self) -> int | None:
        """Steps recorded: ``start..end-1`` (``end - start`` of them), ``None`` if unbounded."""
        return self.length

    @property
    def last(self) -> int | None:
        """Index of the last recorded step (``end - 1``), ``None`` if unbounded."""
        return None if self.end is None else self.end - 1

    def contains(self, step: int) -> bool:
        """Whether step ``step`` (0-based, from the session start) is recorded."""
        return step >= self.start and (self.end is None or step < self.end)

    def clip(self, steps_run: int) -> Window | None:
        """The part of this window that ``steps_run`` steps actually reached, or ``None``."""
        if steps_run <= self.start:
            return None
        end = steps_run if self.end is None else min(self.end, steps_run)
        return Window(self.start, end, unit=self.unit)

    @property
    def in_tokens(self) -> bool:
        """Whether the bounds are response-token indices rather than session steps."""
        return self.unit == "tokens"

    def in_steps(self) -> Window:
        """The same bounds counted in steps (what an engine without token support records)."""
        return Window(self.start, self.end)

    def __str__(self) -> str:
        text = f"{self.start}:{'' if self.end is None else self.end}"
        return f"{text} tokens" if self.in_tokens else text

    def slug(self) -> str:
        """A file-name friendly form: ``w20-80`` or ``w20-end`` (``t20-80`` in tokens)."""
        return f"{'t' if self.in_tokens else 'w'}{self.start}-{'end' if self.end is None else self.end}"
