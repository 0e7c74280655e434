"""Long windows in parts: a window too long for one trace is written as consecutive part traces.

How it works, and why: docs/internals.md, ``profwin.parts``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from profwin.arguments import checked
from profwin.errors import ProfwinError
from profwin.protocols import Artifact
from profwin.spec import ProfileSpec
from profwin.window import Window

__all__ = ["Part", "PartPlan", "PartsMemoryError", "is_memory_error", "part_name", "uses_parts"]


@frozen(kw_only=True)
class Part:
    """Which part of which window a driver records; given to ``Profiler.open(..., part=)``.

    Attributes:
        window: the whole window the part belongs to (the driver's ``window`` argument is the
            part's own steps).
        index: the part's number in its window, from 1.
        session: the profiling session's id, the same in every part of the window.
    """

    window: Window
    index: int
    session: str


@checked
def part_name(prefix: str, *, rank: int, part: Part, steps: Window) -> str:
    """``{prefix}_rank{rank}_{window slug}_part{index:04d}_s{start}-{end}``: a window's parts
    share what comes before ``_part`` and sort in order by name (up to part 9999; the trace
    tools order parts by the number in their provenance, so beyond that only the listing is out
    of order)."""
    end = "end" if steps.end is None else steps.end
    return f"{prefix}_rank{rank}_{part.window.slug()}_part{part.index:04d}_s{steps.start}-{end}"


def uses_parts(spec: ProfileSpec, *, writes_parts: bool) -> bool:
    """Whether a session with ``spec`` writes its window in parts: the profiler can, a bound is
    set, and the window may not fit in one part."""
    if not writes_parts or (spec.part_steps is None and spec.part_events is None):
        return False
    length = spec.window.length
    return length is None or spec.part_steps is None or length > spec.part_steps


class PartPlan:
    """Where each part of a window ends, learning the events per step from the parts written."""

    def __init__(self, spec: ProfileSpec) -> None:
        self._window = spec.window
        self._max_steps = spec.part_steps
        self._max_events = spec.part_events
        self.events_per_step: float | None = None
        """Events per step of the last part written that counted its events."""

    def end(self, start: int) -> int | None:
        """The step before which a part starting at step ``start`` closes (``None``: never)."""
        steps = math.inf if self._max_steps is None else self._max_steps
        if self._max_events is not None and self.events_per_step:
            steps = min(steps, max(1, math.floor(self._max_events / self.events_per_step)))
        end = None if steps == math.inf else start + int(steps)
        if self._window.end is None:
            return end
        return self._window.end if end is None else min(end, self._window.end)

    def learn(self, events: int | None, steps: Window | None) -> None:
        """Take the event count of a part that held ``steps`` (``None``: not counted)."""
        if events is not None and steps is not None and steps.length:
            self.events_per_step = events / steps.length


def is_memory_error(exc: BaseException) -> bool:
    """Whether ``exc`` says host memory ran out: ``MemoryError``, or torch's C++
    ``std::bad_alloc`` and CPU allocator failures, which reach Python as ``RuntimeError``."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("bad_alloc" in text or "can't allocate memory" in text)


class PartsMemoryError(ProfwinError, MemoryError):
    """Memory ran out while a window was being recorded or written. The message names the window,
    the step it happened in and the parts already written, which are kept (:attr:`written`)."""

    def __init__(self, window: Window, *, step: int, written: Sequence[Artifact], cause: BaseException) -> None:
        self.window = window
        self.written = tuple(written)
        if written:
            first, last = written[0], written[-1]
            covered = Window(first.steps.start, last.steps.end) if first.steps and last.steps else None
            kept = (
                f"the {len(written)} part(s) already written are kept (steps {covered if covered else '?'}): "
                f"{_names(written)} in {Path(first.path).parent}"
            )
        else:
            kept = "no part of it was written yet"
        super().__init__(
            f"ran out of memory recording window {window} at step {step} ({type(cause).__name__}: {str(cause)[:200]}); "
            f"{kept}. Lower part_steps / part_events (or the activities and record options) so that one part fits"
        )


def _names(written: Sequence[Artifact]) -> str:
    names = [Path(a.path).name for a in written]
    return ", ".join(names) if len(names) <= 3 else f"{names[0]}, ... {names[-1]}"
