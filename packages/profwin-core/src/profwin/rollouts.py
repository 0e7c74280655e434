"""Profile a trainer's chosen rollouts: one remote session around each of them, nothing around the others.

::

    profiler = profwin.RolloutProfiler("sglang", "2:6", "1,3", router="http://router:30000")
    for rollout_id in range(5):
        with profiler.rollout(rollout_id):          # or `async with`
            generate(rollout_id)
    profiler.records      # one RolloutRecord per profiled rollout: each engine's result and files

What every trainer integration gets from it, and why:

- **Which rollouts**: a :class:`Rollouts` selection, one parser and one text form for every
  trainer: ids (``1,3``), a first id and a count (``3+4``: 3, 4, 5, 6), or every N (``%10``: 0,
  10, 20, ...; ``5%10``: 5, 15, ...; ``5+3%10``: 5, 15, 25).
- **One session per chosen rollout**: :func:`~profwin.remote.engine_targets` and
  :class:`~profwin.RemoteSession` with the spec as given (its window counts from the start of the
  rollout's session, in whatever unit the spec's window says), started before the rollout runs
  and stopped when it returns, raises or is interrupted; what was recorded is collected in every
  case, and the rollout's own exception propagates unchanged.
- **Files named by rollout and engine**: each engine's file prefix is
  ``PREFIX-<kind><id>-<engine>`` (``profwin-rollout3-10.0.0.5_30001``), so one folder holds every
  rollout's files and a name says whose they are.
- **Profiling never fails the rollout**: a router that cannot be asked, an engine that cannot
  start (all or none: the others are stopped again), a stop that fails, each becomes the
  rollout's :class:`RolloutRecord` (not ok, saying why) and a :class:`~profwin.WindowWarning`;
  the rollout runs (unprofiled when the start failed).
- **A rollout not chosen costs a counter**: neither it nor the constructor imports the HTTP
  client or a backend, or sends anything.
- **Engines**: server URLs, engine objects or :class:`~profwin.plugin.EngineTarget` objects (a
  fixed list, or a function asked again at each chosen rollout: how a trainer's engines that come
  and go, or live in Ray actors, are reached), or a router (``router=URL``, profwin's router
  mode): asked for its workers at each chosen rollout's start and again after the stop, so a
  worker that left during the rollout is still stopped at its URL (``left``) and one that joined
  is reported unprofiled (``joined``).
- **Overlaps**: an engine records every request it runs. A rollout that runs through this
  profiler while another one is profiled is named in that record's ``overlapped`` and warned
  about; keeping other work off the engines is the trainer's (docs/integrations/slime.md says
  how slime does it).
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from attrs import frozen

from profwin.arguments import checked
from profwin.errors import ConfigError, ProfwinError, WindowWarning, shown
from profwin.inputs import check_timeout, normalize_url
from profwin.json_form import JsonForm
from profwin.protocols import Artifact, RemoteResult
from profwin.selection import Rollouts
from profwin.spec import ProfileSpec, as_spec
from profwin.window import Window

if TYPE_CHECKING:  # the HTTP client and the backends are imported at the first chosen rollout only
    import profwin.engine  # as a dotted hint, which the argument check resolves only for a value that needs it
    from profwin.remote import OnActive, RemoteSession

__all__ = ["RolloutProfiler", "RolloutRecord", "Rollouts"]

_KINDS = re.compile(r"[a-z]{1,16}")


@frozen(kw_only=True)
class RolloutRecord(JsonForm):
    """What profiling did around one chosen rollout.

    Attributes:
        rollout: the rollout's id.
        kind: ``rollout``, or what the trainer called it (``eval``); it is in the file names.
        ok: every engine started, stopped and had its files collected, and the router (if any)
            lists the same workers as at the start.
        message: one line saying what happened.
        error: what the rollout itself raised (``Type: text``), or ``""`` when it returned.
        results: each engine's result: the start's when the start failed, else the stop's.
        artifacts: the files collected, each with the steps it holds.
        overlapped: the other rollouts that ran through this profiler during this one's session.
        timelines: the session timelines among the artifacts (``record: [timeline]``), one per
            engine rank: ``profwin timeline`` reads them (each names this rollout beside it).
    """

    rollout: int
    kind: str
    ok: bool
    message: str
    error: str = ""
    results: tuple[RemoteResult, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    overlapped: tuple[str, ...] = ()
    timelines: tuple[Path, ...] = ()


Engines = Any
"""Server URLs, engine objects or EngineTargets (one, or a list), or a function returning them."""


@checked(own=("on_active",))  # its rule below: the two words, at the field "on_active"
class RolloutProfiler:
    """Profiles the chosen rollouts of a trainer on its engines (see the module doc).

    Args:
        engine: a backend name (``"sglang"``, ``"vllm"``) or a loaded backend.
        spec: a :class:`~profwin.ProfileSpec`, a :class:`~profwin.Window`, or text like ``"20:80"``;
            its ``prefix`` names the tool in the files (``profwin``), its window counts from each
            rollout's session start.
        rollouts: which rollouts (any form :meth:`Rollouts.of` takes).
        engines: server URLs, engine objects or :class:`~profwin.plugin.EngineTarget` objects, or a
            function returning them, asked at each chosen rollout.
        router: instead of ``engines``, a router's URL whose workers are profiled (asked at each
            chosen rollout).
        version: as for :func:`profwin.remote_session`.
        api_key: as for :func:`profwin.remote_session`.
        timeout: as for :func:`profwin.remote_session`.
        on_active: as for :func:`profwin.remote_session`.

    Attributes:
        records: one :class:`RolloutRecord` per chosen rollout that has ended.
        skipped: how many rollouts were not chosen.
    """

    def __init__(
        self,
        engine: str | profwin.engine.Backend,
        spec: ProfileSpec | Window | str,
        rollouts: object,
        *,
        engines: Engines = None,
        router: str | None = None,
        version: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        on_active: OnActive = "error",
    ) -> None:
        if (engines is None) == (router is None):
            raise ConfigError("give the engines or a router's URL (exactly one of them)", path="engines")
        if on_active not in ("error", "restart"):
            raise ConfigError(f"must be 'error' or 'restart' (got {shown(on_active)})", path="on_active")
        self.engine = engine
        self.spec = as_spec(spec)
        self.rollouts = Rollouts.of(rollouts)
        self.engines = engines
        self.router = None if router is None else _router_url(router)
        self.version = version
        self.api_key = api_key
        self.timeout = check_timeout(timeout)
        self.on_active: OnActive = on_active
        self.records: list[RolloutRecord] = []
        self.skipped = 0
        self._lock = threading.Lock()
        self._running: list[str] = []  # the rollouts in flight through this profiler, chosen or not
        self._profiled: list[_Chosen] = []  # chosen rollouts whose session is open

    def rollout(self, rollout_id: int, *, kind: str = "rollout") -> _Chosen | _NotChosen:
        """A context manager (``with`` or ``async with``) around rollout ``rollout_id``: a session
        on the engines when it is chosen, a counter otherwise. ``kind`` (lower-case letters) tells
        apart rollouts of one id that are not the same (slime's evaluation rollouts: ``eval``)."""
        if not (isinstance(kind, str) and _KINDS.fullmatch(kind)):
            raise ConfigError(f"must be 1-16 lower-case letters (got {shown(kind)})", path="kind")
        if self.rollouts.chosen(rollout_id):
            return _Chosen(self, rollout_id, kind)
        return _NotChosen(self, f"{kind} {rollout_id}")

    # -- what a chosen rollout does ----------------------------------------------------------

    def _session(self, rollout_id: int, kind: str) -> tuple[RemoteSession, list[str]]:
        """A session on the engines as they are now, with each file prefix naming the rollout and
        the engine; and the URLs started (for the router's comparison after the stop)."""
        from profwin.discovery import backend as load_backend
        from profwin.remote import RemoteSession, engine_targets
        from profwin.router import router as ask_router

        backend = load_backend(self.engine) if isinstance(self.engine, str) else self.engine
        if self.router is not None:
            items: Any = list(ask_router(self.router, api_key=self.api_key, timeout=self.timeout))
        else:
            items = self.engines() if callable(self.engines) else self.engines
        targets = engine_targets(backend, items, api_key=self.api_key, timeout=self.timeout)
        tag = f"-{kind}{rollout_id}"
        prefixes = [_prefix(self.spec.prefix, tag, target.name) for target in targets]
        session = RemoteSession(
            backend, targets, self.spec, version=self.version, timeout=self.timeout, on_active=self.on_active,
            prefixes=prefixes, tags={"rollout": rollout_id, "rollout_kind": kind},
        )  # fmt: skip
        return session, [t.name for t in targets]

    def _against_router(self, results: list[RemoteResult], started: list[str]) -> list[RemoteResult]:
        if self.router is None:
            return results
        from profwin.router import against_router

        return against_router(
            results, started, self.router, api_key=self.api_key, timeout=self.timeout, since="the rollout's start"
        )

    def _enter(self, label: str, chosen: _Chosen | None) -> None:
        with self._lock:
            for other in self._profiled:
                other.overlapped.append(label)
            if chosen is not None:
                chosen.overlapped.extend(self._running)  # already running when its session starts
                self._profiled.append(chosen)
            self._running.append(label)

    def _leave(self, label: str, chosen: _Chosen | None) -> None:
        with self._lock:
            self._running.remove(label)
            if chosen is not None and chosen in self._profiled:
                self._profiled.remove(chosen)

    def _record(self, record: RolloutRecord) -> None:
        with self._lock:
            self.records.append(record)
        if not record.ok:
            warnings.warn(f"profwin: {record.message}", WindowWarning, stacklevel=4)


_ENGINE_SLUG = 64  # characters of an engine's name in a file prefix


def _prefix(base: str, tag: str, name: str) -> str:
    """``base`` + ``tag`` + the engine: a URL's host and port, an object's name, as file-name
    characters; within the 128 characters every engine takes (the base is cut, never the tag)."""
    slug = re.sub(r"[^A-Za-z0-9.-]+", "_", name.split("://", 1)[-1]).strip("_.-")[:_ENGINE_SLUG] or "engine"
    suffix = f"{tag}-{slug}"
    return f"{base[: 128 - len(suffix)]}{suffix}"


def _failure(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


class _NotChosen:
    """A rollout that is not profiled: it counts, and is named in a profiled rollout it overlaps."""

    __slots__ = ("label", "profiler")

    def __init__(self, profiler: RolloutProfiler, label: str) -> None:
        self.profiler = profiler
        self.label = label

    def __enter__(self) -> None:
        self.profiler._enter(self.label, None)
        self.profiler.skipped += 1

    def __exit__(self, *exc: object) -> None:
        self.profiler._leave(self.label, None)

    async def __aenter__(self) -> None:
        self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


class _Chosen:
    """A chosen rollout: its session opens on entry and closes (and collects) on exit."""

    def __init__(self, profiler: RolloutProfiler, rollout_id: int, kind: str) -> None:
        self.profiler = profiler
        self.rollout_id = rollout_id
        self.kind = kind
        self.label = f"{kind} {rollout_id}"
        self.session: RemoteSession | None = None
        self.started: list[str] = []
        self.overlapped: list[str] = []
        self.not_started: tuple[str, tuple[RemoteResult, ...]] = ("", ())
        self.record: RolloutRecord | None = None
        """Set when the rollout has ended."""

    # -- sync ---------------------------------------------------------------------------------

    def __enter__(self) -> _Chosen:
        self.profiler._enter(self.label, self)
        try:
            self.session, self.started = self.profiler._session(self.rollout_id, self.kind)
            self.session.start(check=True)
        except Exception as exc:  # profiling never fails the rollout: it runs, unprofiled
            self._not_started(exc)
        except BaseException:  # Ctrl-C while starting: the session stopped what had started
            self.profiler._leave(self.label, self)
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            self._finish(self._stop(self.session.stop) if self.session is not None else None, exc)
        finally:
            self.profiler._leave(self.label, self)

    # -- async --------------------------------------------------------------------------------

    async def __aenter__(self) -> _Chosen:
        import asyncio

        from profwin.remote import off_loop

        self.profiler._enter(self.label, self)
        try:
            session, self.started = await off_loop(lambda: self.profiler._session(self.rollout_id, self.kind))
            self.session = session
            session._ctx.loop = asyncio.get_running_loop()  # an AsyncLLM's calls run on the caller's loop
            await off_loop(session.start)
        except Exception as exc:
            self._not_started(exc)
        except BaseException:
            self.profiler._leave(self.label, self)
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        from profwin.remote import off_loop

        try:
            session = self.session
            results = await off_loop(lambda: self._stop(session.stop)) if session is not None else None
            self._finish(results, exc)
        finally:
            self.profiler._leave(self.label, self)

    # -- the record ---------------------------------------------------------------------------

    def _not_started(self, exc: BaseException) -> None:
        self.session = None
        results: list[RemoteResult] = list(getattr(exc, "results", None) or ()) if isinstance(exc, ProfwinError) else []
        failed = [r for r in results if not r.ok and not r.details.get("rolled_back")]
        if failed:  # the session's all-or-none start: say which engines, and that none profiles
            why = "; ".join(f"{r.target}: {' '.join(r.message.split())}" for r in failed)
            text = f"{len(failed)} of {len(results)} engine(s) could not start ({why}), so none profiles"
        else:
            text = " ".join(str(exc).split()) if isinstance(exc, ProfwinError) else _failure(exc)
        self.not_started = (f"not profiled: {text}", tuple(results))

    def _stop(self, stop: Callable[[], list[RemoteResult]]) -> list[RemoteResult]:
        """The stop's results compared with the router's list; a failure of either is a result."""
        try:
            results = stop()
        except Exception as exc:  # the session's own failure: every engine's outcome is unknown
            return [RemoteResult(target=name, ok=False, message=f"stopping failed: {_failure(exc)}") for name in self.started]
        try:
            return self.profiler._against_router(results, self.started)
        except Exception as exc:
            return [*results, RemoteResult(target=str(self.profiler.router), ok=False, message=f"router: {_failure(exc)}")]

    def _finish(self, results: list[RemoteResult] | None, exc: BaseException | None) -> None:
        error = "" if exc is None else _failure(exc)
        head = f"{self.label} raised {error}; " if exc is not None else f"{self.label}: "
        overlapped = tuple(self.overlapped)
        if results is None:
            why, start_results = self.not_started
            record = RolloutRecord(
                rollout=self.rollout_id, kind=self.kind, ok=False, message=head + why, error=error,
                results=start_results, overlapped=overlapped,
            )  # fmt: skip
        else:
            artifacts = tuple(a for r in results for a in r.artifacts)
            failed = [r for r in results if not r.ok]
            traces = sum(a.kind == "trace" for a in artifacts)
            message = head + f"profiling stopped on {sum(r.ok for r in results)} of {len(results)} engine(s)"
            message += f", {traces} trace(s) collected" + "".join(f"; {r.target}: {r.message}" for r in failed)
            if overlapped:
                message += f"; {', '.join(overlapped)} ran during its session: their engine steps may be in its window"
            record = RolloutRecord(
                rollout=self.rollout_id, kind=self.kind, ok=not failed and not overlapped, message=message, error=error,
                results=tuple(results), artifacts=artifacts, overlapped=overlapped,
                timelines=tuple(a.path for a in artifacts if a.kind == "timeline"),
            )  # fmt: skip
        self.record = record
        self.profiler._record(record)


def _router_url(url: str) -> str:
    """``url`` checked as every server URL is (:func:`profwin.inputs.normalize_url`: http or
    https, a host, no credentials, no query), located at ``router``."""
    try:
        return normalize_url(url)
    except ConfigError as exc:
        raise ConfigError(exc.reason, path="router") from None
