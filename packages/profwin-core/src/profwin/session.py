"""The in-process session: counts steps and opens/closes a profiler driver on the window's edges."""

from __future__ import annotations

import math
import os
import sys
import warnings
from types import TracebackType

from profwin.arguments import checked
from profwin.discovery import profiler as load_profiler
from profwin.errors import ConfigError, WindowWarning, shown
from profwin.protocols import Artifact, Driver, Profiler
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

    A rank that the spec does not select only counts steps.
    """

    __slots__ = ("_driver", "_first", "_plugin", "_state", "_wake", "artifacts", "rank", "spec", "steps")

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
        self.rank: int = current_rank(rank)
        self.steps: int = 0
        """Index of the step in progress: the number of :meth:`step` calls so far."""
        self.artifacts: list[Artifact] = []
        if not isinstance(profiler, (str, Profiler)):  # checked() takes any object for a protocol: this one is used whole
            raise ConfigError(f"must be a profiler's name or a Profiler (got {shown(profiler)})", path="profiler")
        self._plugin: str | Profiler = profiler
        self._driver: Driver | None = None
        # Step 0 reaches _boundary, which refuses a step() before start().
        self._wake: float = 0
        self._first = 0
        self._state = "new"

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
        if not self.active:
            self._wake = _NEVER
            return self
        if isinstance(self._plugin, str):
            self._plugin = load_profiler(self._plugin)
        self.spec = self._plugin.check(self.spec)
        self.spec.prepare_output_dir()
        self._first = max(self.spec.window.start - self._plugin.lead_steps, 0)
        self._wake = self._first
        if self._first == 0:
            self._boundary()
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
        if not self.active:
            return self.artifacts
        window = self.spec.window
        ran = window.clip(self.steps + 1 if failed else self.steps)
        if self._driver is not None:
            driver, self._driver = self._driver, None
            self.artifacts.extend(driver.close(ran, failed=failed))
        if ran is None:
            warnings.warn(
                f"profwin: window {window} was never reached: the session ran {self.steps} step(s) "
                f"and recording starts at step {window.start}; nothing was written",
                WindowWarning,
                stacklevel=3,
            )
        elif window.end is not None and ran != window:
            warnings.warn(
                f"profwin: the session closed at step {self.steps}, inside window {window}; the trace holds steps {ran}",
                WindowWarning,
                stacklevel=3,
            )
        return self.artifacts

    def __enter__(self) -> Session:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close(failed=True)
        except Exception as close_exc:  # never mask the user's exception with ours
            warnings.warn(f"profwin: writing the trace failed after {exc_type.__name__}: {close_exc}", stacklevel=2)

    # -- window edges -----------------------------------------------------------------------

    def _boundary(self) -> None:
        if self._state == "new":
            self.steps -= 1
            raise RuntimeError("profwin.Session.step() was called before start(): enter the session (`with session:`) first")
        step, window = self.steps, self.spec.window
        if self._driver is None:
            assert not isinstance(self._plugin, str)
            self._driver = self._plugin.open(self.spec, window=window, first_step=step, rank=self.rank)
            self._wake = step + 1
        elif window.end is not None and step >= window.end:
            driver, self._driver = self._driver, None
            self._wake = _NEVER
            self.artifacts.extend(driver.close(window, failed=False))
        else:
            self._driver.advance(step)
            self._wake = step + 1
