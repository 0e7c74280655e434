"""Step markers: which trace events mark a step, declared by the producer that writes them.

How it works, and why: docs/internals.md, ``profwin.markers``.
"""

from __future__ import annotations

import re
from typing import Literal

from attrs import field, frozen, validators

from profwin.arguments import checked

__all__ = ["MARKER_ENV", "MAX_STEP_DIGITS", "TORCH_MARKER", "StepMarker"]

MARKER_ENV = "PROFWIN_STEP_MARKER"
"""The environment variable naming the producer whose markers a trace's steps come from, when the
user chooses one over the default order (e.g. ``vllm`` for a vLLM trace that also holds
``ProfilerStep#``)."""

MAX_STEP_DIGITS = 18
"""A step number written with more digits than this is refused (it fits in an int64)."""


def _compiles(_: object, attribute: object, value: str) -> None:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"step_marker.pattern: {value!r} is not a regular expression ({exc})") from None


@checked
@frozen(kw_only=True)
class StepMarker:
    """How one producer marks its steps in a Chrome/Kineto trace.

    Attributes:
        producer: the name reported as the trace's producer (``torch``, ``vllm``).
        pattern: a regular expression matched at the start of a host-side complete event's
            name (``ph: "X"``; GPU-side copies, category ``gpu_*``, never count).
        numbering: ``"number"``: the pattern's first group is the step number, as written;
            ``"order"``: steps are numbered by their order in the trace, per process.
        preference: when a trace holds several producers' markers the lowest wins (a plugin's
            counts from 1: only core's torch marker has 0).
    """

    producer: str = field(validator=validators.min_len(1))
    pattern: str = field(validator=_compiles)
    numbering: Literal["number", "order"] = field(validator=validators.in_(("number", "order")))
    preference: int = 100
    regex: re.Pattern[str] = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        regex = re.compile(self.pattern)
        if self.numbering == "number" and regex.groups < 1:
            raise ValueError(f"step_marker.pattern: {self.pattern!r} numbers steps but has no group for the number")
        object.__setattr__(self, "regex", regex)

    def step_number(self, name: str) -> int:
        """The number a ``numbering="number"`` marker's name carries (its first group).

        Raises ValueError when ``name`` is not this marker or the number has more than
        :data:`MAX_STEP_DIGITS` digits."""
        match = self.regex.match(name)
        digits = match.group(1) if match else None
        if digits is None or not (digits.isascii() and digits.isdigit()):
            raise ValueError(f"{name[:40]!r} does not carry a {self.producer} step number")
        if len(digits) > MAX_STEP_DIGITS:
            raise ValueError(f"step marker {name[:40]}… has a {len(digits)}-digit number; at most {MAX_STEP_DIGITS} digits")
        return int(digits)


TORCH_MARKER = StepMarker(producer="torch", pattern=r"ProfilerStep#(\d+)$", numbering="number", preference=0)
"""torch.profiler's (and profwin's) ``ProfilerStep#k``."""
