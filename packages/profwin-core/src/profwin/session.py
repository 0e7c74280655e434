"""The in-process session: counts steps and opens/closes a profiler driver on the window's edges."""

from __future__ import annotations

import math
import os
import sys
import warnings
from types import TracebackType

from profwin.arguments import checked, warn
from profwin.discovery import profiler as load_profiler
from profwin.errors import ConfigError, WindowWarning, shown
from profwin.parts import Part, PartPlan, PartsMemoryError, is_memory_error, uses_parts
from profwin.protocols import Artifact, Driver, Profiler
from profwin.provenance import new_session_id
from profwin.runtime.timeline_record import TimelineRecorder
from profwin.spec import ProfileSpec
from profwin.window import Window

__all__ = ["Session", "current_rank"]

_NEVER = math.inf


_MAX_RANK = 2**31 - 1


@checked(own=("explicit",))  # the rank rule below names the range, at the field "rank"
def current_rank(explicit: int | None = None) -> int:
    """This process's rank: ``explicit``, else ``torch.distributed``'s if it is initialised,
    else ``RANK``, else ``LOCAL_RANK``, else 0. Never imports torch.

    A rank is an ``int`` in ``[0, 2**31 - 1]`` (``bool`` is not a rank); in the environment it
    is written in ASCII digits.
    """
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, int) or not 0 <= explicit <= _MAX_RANK:
            raise ConfigError(f"must be None or an int in [0, {_MAX_RANK}] (got {shown(explicit)})", path="rank")
        return explicit
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    for var in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(var, "").strip()
        if value:
            # str.isdigit() also accepts digits of other scripts and superscripts, which int() then
            # reads differently or refuses: a rank in the environment is ASCII digits only.
            if not (value.isascii() and value.isdigit()) or len(value) > len(str(_MAX_RANK)) or int(value) > _MAX_RANK:
                raise ConfigError(
                    f"environment variable {var} must be an integer in [0, {_MAX_RANK}] in ASCII digits (got {shown(value)})"
                )
            return int(value)
    return 0


@checked(own=("rank",))  # current_rank's rule
class Session:
    """Profile steps ``[start, end)`` of a loop with an in-process profiler.

    ::

        with profwin.Session(spec, profiler="torch") as s:
            for token in range(n):
                decode_one_token()
                s.step()            # step `s.steps` has ended
        s.artifacts                 # files written, with the steps they cover

    Step 0 begins when the session is entered; each :meth:`step` call ends the current step.
    The driver opens when step ``window.start`` begins (``lead_steps`` earlier if the profiler
    warms up), and closes — writing its file — when step ``window.end`` would begin. Closing the
    session early (loop end, exception, ``KeyboardInterrupt``) writes the part of the window that
    ran; a loop that ends before the window starts writes nothing and warns.

    A window longer than ``spec.part_steps`` is written as consecutive part traces by profilers
    that can (:mod:`profwin.parts`): the driver is closed after one part's last step and a new
    one opened before the next part's first. Memory running out is a
    :class:`~profwin.parts.PartsMemoryError` naming the window and the parts already written.

    With ``record: [timeline]`` (``spec.timeline``) the session also times every step from the
    start to the close, not only the window's, and writes them beside the trace
    (:mod:`profwin.runtime.timeline_record`; an artifact of kind ``timeline``, with the trace's session id):
    then each :meth:`step` also reads the clock.

    A rank that the spec does not select only counts steps. The rank is read when the session
    starts (``rank=``, else :func:`current_rank`).
    """

    __slots__ = (
        "_driver", "_edge", "_first", "_part", "_part_end", "_part_start", "_plan", "_plugin", "_rank", "_state",
        "_timeline", "_wake", "artifacts", "nothing_recorded", "rank", "spec", "steps",
    )  # fmt: skip

    def __init__(
        self,
        spec: ProfileSpec | Window | str | None = None,
        *,
        profiler: str | Profiler = "torch",
        rank: int | None = None,
    ) -> None:
        if spec is None or isinstance(spec, str):
            spec = ProfileSpec(window=Window.parse(spec) if spec else Window())
        elif isinstance(spec, Window):
            spec = ProfileSpec(window=spec)
        self.spec: ProfileSpec = spec
        self._rank = rank
        self.rank: int = current_rank(rank)
        """This process's rank (:func:`current_rank`), read again when the session starts: a session
        made before ``torch.distributed.init_process_group`` records as the rank the group gives it."""
        self.steps: int = 0
        """Index of the step in progress: the number of :meth:`step` calls so far."""
        self.artifacts: list[Artifact] = []
        self.nothing_recorded: str | None = None
        """After :meth:`close`, why no file was written, in one line (``None`` when one was): the
        rank is not selected, or the window was never reached (with the last step seen)."""
        if not isinstance(profiler, (str, Profiler)):  # checked() takes any object for a protocol: this one is used whole
            raise ConfigError(f"must be a profiler's name or a Profiler (got {shown(profiler)})", path="profiler")
        self._plugin: str | Profiler = profiler
        self._driver: Driver | None = None
        # Step 0 reaches _boundary, which refuses a step() before start().
        self._wake: float = 0
        self._first = 0
        self._state = "new"
        self._plan: PartPlan | None = None
        self._part: Part | None = None
        self._part_start = 0
        self._part_end: int | None = None
        self._timeline: TimelineRecorder | None = None
        self._edge: float = 0  # with a timeline: the step of the next window edge (_wake is every step)

    @property
    def active(self) -> bool:
        """Whether this rank records anything."""
        return self.spec.profiles_rank(self.rank)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> Session:
        """Check the spec and the output directory, then begin step 0. Called by ``with``."""
        if self._state != "new":
            raise RuntimeError(f"a profwin.Session can be started once (this one is {self._state})")
        self._state = "running"
        self.rank = current_rank(self._rank)
        if not self.active:
            self._wake = _NEVER
            return self
        if isinstance(self._plugin, str):
            self._plugin = load_profiler(self._plugin)
        self.spec = self._plugin.check(self.spec)
        self.spec.prepare_output_dir()
        if uses_parts(self.spec, writes_parts=getattr(self._plugin, "writes_parts", False)):
            self._plan = PartPlan(self.spec)
            self._part = Part(window=self.spec.window, index=0, session=new_session_id())
        self._first = max(self.spec.window.start - self._plugin.lead_steps, 0)
        self._wake = self._first
        if self.spec.timeline:
            self._timeline = TimelineRecorder(
                self.spec.output_dir, prefix=self.spec.prefix, rank=self.rank, engine=self._plugin.name,
                session=None if self._part is None else self._part.session, window=str(self.spec.window),
            )  # fmt: skip
            self._timeline.tick()  # step 0 begins
            self._edge, self._wake = self._wake, 1
        if self._first == 0:
            self._boundary(ticked=True)
        return self

    def step(self) -> None:
        """End the current step. Outside the window this is one increment and one compare."""
        self.steps += 1
        if self.steps >= self._wake:
            self._boundary()

    def close(self, *, failed: bool = False) -> list[Artifact]:
        """Stop profiling and write what was recorded; returns the files. Idempotent.

        ``failed`` means the current step was interrupted by an exception: it ran in part and is
        kept in the trace.
        """
        if self._state == "closed":
            return self.artifacts
        self._state = "closed"
        self._wake = _NEVER
        self._edge = _NEVER
        if not self.active:
            ranks = ", ".join(map(str, self.spec.ranks))
            self.nothing_recorded = (
                f"rank {self.rank} is not selected: the spec records rank(s) {ranks} only "
                "(set ranks: all, or a list holding this rank; the rank comes from Session(rank=), "
                "torch.distributed, RANK or LOCAL_RANK)"
            )
            return self.artifacts
        window = self.spec.window
        ran = window.clip(self.steps + 1 if failed else self.steps)
        if self._driver is not None:
            driver, self._driver = self._driver, None
            ran_here = ran
            if ran is not None and self._part is not None:
                # The part open now holds the steps from its start; none when the loop ended
                # right after the boundary that opened it.
                ran_here = Window(max(ran.start, self._part_start), ran.end) if ran.end > self._part_start else None  # type: ignore[operator]
            self._close_driver(driver, ran_here, failed=failed)
        self._close_timeline(failed=failed)
        if ran is None:
            last = f"the last was step {self.steps - 1}" if self.steps else "none ran"
            self.nothing_recorded = (
                f"window {window} was never reached: the session ran {self.steps} step(s) ({last}), "
                f"and recording starts at step {window.start}"
            )
            warn(f"profwin: {self.nothing_recorded}; nothing was written", WindowWarning)
        elif window.end is not None and ran != window:
            warn(
                f"profwin: the session closed at step {self.steps}, inside window {window}; the trace holds steps {ran}",
                WindowWarning,
            )
        return self.artifacts

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            with warnings.catch_warnings():
                if isinstance(exc, PartsMemoryError):
                    # It names what was written; "the trace holds steps ..." would count a part lost.
                    warnings.simplefilter("ignore", WindowWarning)
                self.close(failed=True)
        except Exception as close_exc:  # never mask the user's exception with ours
            if not (exc is not None and is_memory_error(exc) and isinstance(close_exc, PartsMemoryError)):
                warn(f"profwin: writing the trace failed after {exc_type.__name__}: {close_exc}")
        recording = self.active and self.steps >= self.spec.window.start
        if exc is not None and recording and is_memory_error(exc) and not isinstance(exc, PartsMemoryError):
            # Out of memory inside a step of the loop: most likely the recording's, and what the
            # user needs is which parts survived. The original error is chained.
            raise PartsMemoryError(self.spec.window, step=self.steps, written=self.artifacts, cause=exc) from exc

    def _close_timeline(self, *, failed: bool) -> None:
        """Write the timeline: the steps that ran (the one in progress too when it failed)."""
        timeline, self._timeline = self._timeline, None
        if timeline is None:
            return
        if not failed:
            timeline.drop_last()  # the step begun by the last step() call never ran
        ran = self.spec.window.clip(timeline.steps)
        if ran is not None:
            timeline.set_window(ran)
        if timeline.header["session"] is None:
            timeline.header["session"] = new_session_id()
        timeline.close()
        self.artifacts.extend(timeline.artifacts(self._plugin if isinstance(self._plugin, str) else self._plugin.name))

    # -- window edges -----------------------------------------------------------------------

    def _boundary(self, *, ticked: bool = False) -> None:
        if self._state == "new":
            self.steps -= 1
            raise RuntimeError("profwin.Session.step() was called before start(): enter the session (`with session:`) first")
        if self._timeline is not None:
            if not ticked:
                self._timeline.tick()  # step `steps` begins
            if self.steps < self._edge:
                self._wake = self.steps + 1
                return
            self._edge_reached()
            self._edge, self._wake = self._wake, min(self._wake, self.steps + 1)
            return
        self._edge_reached()

    def _edge_reached(self) -> None:
        step, window = self.steps, self.spec.window
        if self._driver is None:
            self._open(step, window.start)
        elif window.end is not None and step >= window.end:
            driver, self._driver = self._driver, None
            self._wake = _NEVER
            self._close_driver(driver, window if self._part is None else Window(self._part_start, window.end), failed=False)
        elif self._part_end is not None and step >= self._part_end:
            # A part boundary: step - 1 was the part's last. Closed and opened between two steps,
            # so the cost is in neither, and each step is in exactly one part.
            driver, self._driver = self._driver, None
            self._wake = _NEVER  # until the next part is open
            self._close_driver(driver, Window(self._part_start, step), failed=False)
            del driver  # the part's recording is freed before the next one starts
            self._open(step, step)
        else:
            self._driver.advance(step)
            self._wake = step + 1

    def _open(self, step: int, start: int) -> None:
        """Open the driver at ``step`` for the part (or window) whose first step is ``start``."""
        assert not isinstance(self._plugin, str)
        window = self.spec.window
        if self._plan is None or self._part is None:
            self._driver = self._plugin.open(self.spec, window=window, first_step=step, rank=self.rank)
        else:
            self._part = Part(window=window, index=self._part.index + 1, session=self._part.session)
            self._part_start, self._part_end = start, self._plan.end(start)
            steps = Window(start, self._part_end)
            try:
                self._driver = self._plugin.open(self.spec, window=steps, first_step=step, rank=self.rank, part=self._part)  # type: ignore[call-arg]
            except Exception as exc:
                if is_memory_error(exc):
                    raise PartsMemoryError(window, step=step, written=self.artifacts, cause=exc) from exc
                raise
        if self._timeline is not None and self._timeline.header["session"] is None:
            # The trace's session id (a driver that makes its own says it): the two files share it.
            self._timeline.header["session"] = getattr(self._driver, "session", None)
        self._wake = step + 1

    def _close_driver(self, driver: Driver, steps: Window | None, *, failed: bool) -> None:
        try:
            written = driver.close(steps, failed=failed)
        except Exception as exc:
            if is_memory_error(exc):
                raise PartsMemoryError(self.spec.window, step=self.steps, written=self.artifacts, cause=exc) from exc
            raise
        self.artifacts.extend(written)
        if self._plan is not None:
            self._plan.learn(getattr(driver, "recorded_events", None), steps)
