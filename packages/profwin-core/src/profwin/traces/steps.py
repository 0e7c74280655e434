"""Step markers: which events mark a step, for each producer, and how steps are numbered.

=========  =====================================================  ===============================
producer   marker (a host-side complete event, ``ph: X``)         step number
=========  =====================================================  ===============================
torch      ``ProfilerStep#k`` (torch.profiler, profwin sessions)  ``k`` itself
vllm       ``execute_context_<n>(<t>)_generation_<n>(<t>)``       order in the trace, from 0
sglang     ``step[<MODE> bs=N toks=T]`` (and richer variants)     order in the trace, from 0
=========  =====================================================  ===============================

GPU-side copies of annotations (category ``gpu_user_annotation``) are not markers: they trail
their host step and would make steps overlap. A trace cut by :func:`profwin.traces.trim` records
the number of its first step (top-level key ``profwin.first_step``), so order-numbered steps keep
their numbers across a trim. When a trace holds several producers' markers, ``torch`` wins (its
numbers are the session's), then ``vllm``, then ``sglang``.

When markers of one number appear on several processes (a merged multi-rank trace), the step is
their union: from the earliest start to the latest end. Order numbering is per process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from profwin.errors import ConfigError
from profwin.traces.reader import TraceError
from profwin.window import Window

__all__ = ["PRODUCERS", "Step", "as_window", "marker_kind", "number_steps", "select_steps"]

PRODUCERS: tuple[str, ...] = ("torch", "vllm", "sglang")
"""Marker kinds, in the order of preference when a trace holds several."""

_TORCH = re.compile(r"ProfilerStep#(\d+)")
_VLLM = re.compile(r"execute_context_\d+\(\d+\)_generation_\d+\(\d+\)")
_SGLANG = re.compile(r"step\[[A-Z_]+\b")


def marker_kind(name: str, category: object) -> str | None:
    """The producer whose step marker ``name`` is, or ``None`` (cheap enough for every event)."""
    first = name[:1]
    if not first or first not in "Pes" or (isinstance(category, str) and category.startswith("gpu_")):
        return None
    if first == "P" and _TORCH.fullmatch(name):
        return "torch"
    if first == "e" and _VLLM.match(name):
        return "vllm"
    if first == "s" and _SGLANG.match(name):
        return "sglang"
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


Marker = tuple[Any, str, float, float]
"""``(pid, name, start, end)`` of one marker event."""


def number_steps(markers: Mapping[str, Sequence[Marker]], *, first_step: int = 0) -> tuple[str | None, list[Step]]:
    """Pick the producer (see the module docstring) and turn its markers into numbered steps."""
    producer = next((p for p in PRODUCERS if markers.get(p)), None)
    if producer is None:
        return None, []
    spans: dict[int, list[Any]] = {}
    for number, (_, name, start, end) in _numbered(producer, markers[producer], first_step):
        span = spans.get(number)
        if span is None:
            spans[number] = [start, end, name]
        else:
            span[0], span[1] = min(span[0], start), max(span[1], end)
    steps = [Step(number, start, end, name) for number, (start, end, name) in sorted(spans.items())]
    return producer, steps


def _numbered(producer: str, markers: Iterable[Marker], first_step: int) -> Iterable[tuple[int, Marker]]:
    if producer == "torch":
        for marker in markers:
            match = _TORCH.fullmatch(marker[1])
            assert match is not None  # marker_kind admitted it
            yield int(match.group(1)), marker
        return
    by_process: dict[Any, list[Marker]] = {}
    for marker in markers:
        by_process.setdefault(marker[0], []).append(marker)
    for group in by_process.values():
        group.sort(key=lambda m: m[2])
        yield from enumerate(group, start=first_step)


def select_steps(steps: Sequence[Step], window: Window | None, *, path: str | Path, producer: str | None) -> list[Step]:
    """The steps of ``window`` (all of them for ``None``); a window reaching past the trace is
    clipped to it, one that holds none of its steps is a :class:`TraceError`."""
    if not steps:
        raise TraceError(
            path,
            "no step markers found; expected ProfilerStep#k (torch.profiler, profwin), "
            "execute_context_…_generation_… (vLLM) or step[…] (SGLang) complete events",
        )
    if window is None:
        return list(steps)
    chosen = [s for s in steps if window.contains(s.number)]
    if not chosen:
        raise TraceError(
            path,
            f"window {window} is outside the trace: it holds {producer} steps {_ranges([s.number for s in steps])}",
        )
    return chosen


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
    """Accept a :class:`Window`, text like ``"20:80"`` or ``None``."""
    if window is None or isinstance(window, Window):
        return window
    if isinstance(window, str):
        return Window.parse(window)
    raise ConfigError(f"window must be a profwin.Window, text like '20:80' or None (got {window!r})", path="window")
