"""``profwin_sglang.session``: profile a session-relative window on live SGLang servers.

::

    with profwin_sglang.session("http://127.0.0.1:30000", spec) as s:
        send_rollout_requests()          # step 0 is the first batch after the start request
    s.artifacts                          # this session's trace files and the steps they hold

Start: read each server's version, device and whether the profwin-sglang server plugin answers;
choose a plan (:mod:`profwin_sglang.plan`); send ``/start_profile`` with this session's own
``profile_id``. Stop (context exit): ``/stop_profile``, which writes the trace if the profiler is
still recording (SGLang's auto-stop only fires when the batch *after* the window runs). SGLang
answers "Profiling is not in progress" when it auto-stopped already — or when the window was never
reached, in which case the window is still armed and profwin disarms it. Then collect the files,
trim them in ``trim`` mode, and say which steps each holds. Several servers are driven concurrently,
each with its own result.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Sequence
from types import TracebackType
from typing import Any, TypeVar

from profwin.errors import ConfigError, WindowWarning
from profwin.plugin_api import Artifact, RemoteResult, fan_out
from profwin.spec import ProfileSpec
from profwin.window import Window
from profwin_sglang.http import ServerError
from profwin_sglang.plan import Plan, plan_window
from profwin_sglang.request import activities_for, new_profile_id, options_of, profile_request
from profwin_sglang.targets import EngineTarget, HttpTarget, ServerInfo, StopOutcome, Target, disarm_body, is_engine
from profwin_sglang.traces import count_steps, find_artifacts, trim_in_place
from profwin_sglang.versions import Features, features

__all__ = ["SessionError", "SglangSession", "session"]

T = TypeVar("T")
# A server whose version cannot be read: assume the older, less exact behaviour.
_UNKNOWN = Features(version=None, req_type=True, client_profile_id=False, exact_immediate=False, server_info_path="/server_info")
# After "not in progress" the auto-stop has written the files; give a slow disk this long to show them.
_FILES_GRACE_S = 2.0


class SessionError(RuntimeError):
    """Starting or stopping failed on at least one server; ``results`` holds every server's outcome."""

    def __init__(self, message: str, results: Sequence[RemoteResult]) -> None:
        super().__init__(message)
        self.results = list(results)


class _Remote:
    """One server's part of a session."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.info: ServerInfo | None = None
        self.features: Features = _UNKNOWN
        self.plan: Plan | None = None
        self.profile_id = new_profile_id()
        self.body: dict[str, Any] = {}
        self.dropped: list[str] = []
        self.started = False
        self.started_at = 0.0

    def details(self, **extra: Any) -> dict[str, Any]:
        plan = self.plan
        return {
            "version": self.features.label,
            "plugin": bool(self.info and self.info.plugin),
            "mode": plan.mode if plan else None,
            "window": str(plan.window) if plan else None,
            "recorded": str(plan.recorded) if plan else None,
            "profile_id": self.profile_id,
            "request": dict(self.body),
            "dropped": list(self.dropped),
            **extra,
        }


class SglangSession:
    """A profiling session on one or more SGLang servers (URLs) or an in-process ``Engine``.

    Use it as a (sync or async) context manager, or call :meth:`start`/:meth:`stop` yourself.
    After the stop, :attr:`artifacts` lists every file with the session steps it holds, and
    :attr:`results` each server's outcome.
    """

    def __init__(
        self,
        targets: Sequence[Target],
        spec: ProfileSpec,
        *,
        version: str | None = None,
    ) -> None:
        if not targets:
            raise ConfigError("give at least one SGLang server URL or Engine", path="target")
        self.spec = spec
        self.options = options_of(spec)
        self.version = version
        self.remotes = [_Remote(t) for t in targets]
        self.results: list[RemoteResult] = []
        self.artifacts: list[Artifact] = []

    # -- start ------------------------------------------------------------------------------

    def _prepare(self, remote: _Remote, info: ServerInfo) -> None:
        remote.info = info
        version = self.version or info.version
        remote.features = features(version) if version else _UNKNOWN
        remote.plan = plan_window(
            self.spec.window,
            features=remote.features,
            plugin=info.plugin,
            start=self.options.start,
            by_stage=self.options.by_stage,
        )
        activities, remote.dropped = activities_for(self.spec, info.device)
        remote.body = profile_request(self.spec, remote.plan, activities=activities, profile_id=remote.profile_id)

    def _started(self, remote: _Remote) -> RemoteResult:
        remote.started = True
        assert remote.plan is not None
        notes = [remote.plan.warning] if remote.plan.warning else []
        if remote.dropped:
            notes.append(f"dropped {', '.join(remote.dropped)}")
        message = f"{remote.plan.mode} window {remote.plan.window} armed, profile_id {remote.profile_id}"
        return RemoteResult(target=remote.target.name, ok=True, message=message, details=remote.details(notes=notes))

    def _start_one(self, remote: _Remote) -> RemoteResult:
        try:
            self._prepare(remote, remote.target.info())
            remote.started_at = time.time() - 1.0  # file times have 1 s granularity on some filesystems
            remote.target.start(remote.body)
        except (ServerError, ConfigError, RuntimeError) as exc:
            return RemoteResult(target=remote.target.name, ok=False, message=str(exc), details=remote.details())
        return self._started(remote)

    async def _astart_one(self, remote: _Remote) -> RemoteResult:
        try:
            self._prepare(remote, await remote.target.ainfo())
            remote.started_at = time.time() - 1.0
            await remote.target.astart(remote.body)
        except (ServerError, ConfigError, RuntimeError) as exc:
            return RemoteResult(target=remote.target.name, ok=False, message=str(exc), details=remote.details())
        return self._started(remote)

    def start(self, *, check: bool = True) -> list[RemoteResult]:
        """Start on every server concurrently. With ``check``, a failure anywhere stops the servers
        that did start and raises :class:`SessionError`. What the user must know about a server's
        plan (a trimmed window, a dropped activity) is a :class:`~profwin.errors.WindowWarning`."""
        return _warned(self._start(check))

    async def astart(self, *, check: bool = True) -> list[RemoteResult]:
        return _warned(await self._astart(check))

    def _start(self, check: bool) -> list[RemoteResult]:
        self.spec.prepare_output_dir()
        results = fan_out(self._start_one, self.remotes, thread_prefix="profwin-sglang")
        if check:
            self._raise_if_failed(results, "start")
        return results

    async def _astart(self, check: bool) -> list[RemoteResult]:
        self.spec.prepare_output_dir()
        results = list(await asyncio.gather(*(self._astart_one(r) for r in self.remotes)))
        if check:
            await self._araise_if_failed(results, "start")
        return results

    def _failure(self, results: Sequence[RemoteResult], what: str) -> SessionError | None:
        failed = [r for r in results if not r.ok]
        if not failed:
            return None
        lines = "; ".join(f"{r.target}: {r.message}" for r in failed)
        return SessionError(f"profwin-sglang: {what} failed on {len(failed)} of {len(results)} server(s): {lines}", results)

    def _raise_if_failed(self, results: Sequence[RemoteResult], what: str) -> None:
        error = self._failure(results, what)
        if error is not None:
            if any(r.started for r in self.remotes):
                self._stop()  # its notes ("window never reached") are expected here: not warned
            raise error

    async def _araise_if_failed(self, results: Sequence[RemoteResult], what: str) -> None:
        error = self._failure(results, what)
        if error is not None:
            if any(r.started for r in self.remotes):
                await self._astop()
            raise error

    # -- stop -------------------------------------------------------------------------------

    def _needs_disarm(self, remote: _Remote, outcome: StopOutcome) -> bool:
        assert remote.plan is not None
        # A by-stage arming survives a stop (the decode capture can still start later); a relative
        # window that had not begun is still armed. Immediate modes never leave anything armed.
        return remote.plan.mode == "by_stage" or (remote.plan.mode == "relative" and outcome == "not-running")

    def _finish(self, remote: _Remote, outcome: StopOutcome) -> RemoteResult:
        """Find this session's files and work out which steps each holds."""
        assert remote.plan is not None
        plan = remote.plan
        profile_id = remote.profile_id if remote.features.client_profile_id else None
        files = self._find(remote, profile_id)
        if not files and outcome == "not-running":
            deadline = time.monotonic() + _FILES_GRACE_S
            while not files and time.monotonic() < deadline:
                time.sleep(0.2)
                files = self._find(remote, profile_id)
        notes: list[str] = []
        artifacts: list[Artifact] = []
        written = sum(a.bytes for a in files)  # as SGLang wrote them, before any trimming
        for artifact in files:
            steps: Window | None
            if plan.mode == "by_stage":
                steps = None
            elif artifact.kind in ("trace", "merged-trace") and plan.trims:
                steps = self._trim(artifact.path, plan, notes)
                if steps is None:
                    artifact.path.unlink(missing_ok=True)
                    continue
            elif artifact.kind in ("trace", "merged-trace") and outcome == "stopped":
                # Stopped by us while recording: the window may have been cut short, or (immediate
                # mode without traffic) never begun.
                steps = plan.window.clip(plan.window.start + count_steps(artifact.path))
                if steps is None:
                    artifact.path.unlink(missing_ok=True)
                    notes.append(f"no batch ran while recording: window {plan.window} was never reached")
                    continue
            elif artifact.kind == "memory-snapshot":
                steps = plan.recorded
            else:
                steps = plan.window
            artifacts.append(
                Artifact(
                    path=artifact.path,
                    steps=steps,
                    bytes=artifact.path.stat().st_size,
                    rank=artifact.rank,
                    kind=artifact.kind,
                    producer=f"sglang@{remote.target.name}",
                )
            )
        if plan.trims and any(a.kind == "memory-snapshot" for a in artifacts):
            notes.append(f"memory snapshots cannot be trimmed and hold steps {plan.recorded}")
        if not artifacts and not notes:
            where = self.spec.output_dir
            notes.append(
                f"no files of this session in {where}: window {plan.window} was never reached"
                if outcome == "not-running"
                else f"no files of this session in {where} (a remote server writes them on its own disk)"
            )
        else:
            partial = [a for a in artifacts if a.kind == "trace" and a.steps is not None and a.steps != plan.window]
            if partial:
                notes.append(f"window {plan.window} ran only in part: the trace holds steps {partial[0].steps}")
        stopped_by = "profwin" if outcome == "stopped" else "SGLang (auto-stop) or never started"
        return RemoteResult(
            target=remote.target.name,
            ok=True,
            message=f"stopped by {stopped_by}; {len(artifacts)} file(s)" + (f"; {'; '.join(notes)}" if notes else ""),
            artifacts=tuple(artifacts),
            details=remote.details(stop=outcome, notes=notes, written_bytes=written),
        )

    def _find(self, remote: _Remote, profile_id: str | None) -> list[Artifact]:
        return find_artifacts(
            self.spec.output_dir,
            prefix=self.spec.prefix,
            profile_id=profile_id,
            since=remote.started_at,
            producer=f"sglang@{remote.target.name}",
        )

    @staticmethod
    def _trim(path: Any, plan: Plan, notes: list[str]) -> Window | None:
        ran = count_steps(path)
        kept = trim_in_place(path, plan.window)
        if kept == 0:
            notes.append(f"the server ran {ran} batch(es) of {plan.recorded}: window {plan.window} never started")
            return None
        notes.append(f"trace trimmed from {ran} recorded batch(es) to steps {plan.window.start}:{plan.window.start + kept}")
        return Window(plan.window.start, plan.window.start + kept)

    def _stop_one(self, remote: _Remote) -> RemoteResult:
        if not remote.started:
            return RemoteResult(target=remote.target.name, ok=False, message="not started", details=remote.details())
        remote.started = False
        try:
            outcome = remote.target.stop()
            if self._needs_disarm(remote, outcome):
                remote.target.start(disarm_body(str(self.spec.output_dir)))
        except (ServerError, RuntimeError) as exc:
            return RemoteResult(target=remote.target.name, ok=False, message=str(exc), details=remote.details())
        return self._finish(remote, outcome)

    async def _astop_one(self, remote: _Remote) -> RemoteResult:
        if not remote.started:
            return RemoteResult(target=remote.target.name, ok=False, message="not started", details=remote.details())
        remote.started = False
        try:
            outcome = await remote.target.astop()
            if self._needs_disarm(remote, outcome):
                await remote.target.astart(disarm_body(str(self.spec.output_dir)))
        except (ServerError, RuntimeError) as exc:
            return RemoteResult(target=remote.target.name, ok=False, message=str(exc), details=remote.details())
        return await asyncio.to_thread(self._finish, remote, outcome)

    def _record(self, results: list[RemoteResult]) -> list[RemoteResult]:
        self.results = results
        self.artifacts = [a for r in results for a in r.artifacts]
        return results

    def stop(self) -> list[RemoteResult]:
        """Stop on every started server concurrently and collect this session's files; a window
        that ran only in part, or not at all, is a :class:`~profwin.errors.WindowWarning`."""
        return _warned(self._stop())

    async def astop(self) -> list[RemoteResult]:
        return _warned(await self._astop())

    def _stop(self) -> list[RemoteResult]:
        started = [r for r in self.remotes if r.started]
        return self._record(fan_out(self._stop_one, started, thread_prefix="profwin-sglang"))

    async def _astop(self) -> list[RemoteResult]:
        started = [r for r in self.remotes if r.started]
        return self._record(list(await asyncio.gather(*(self._astop_one(r) for r in started))))

    # -- handing a started session to another process (``profwin start`` then ``profwin stop``)

    def state(self) -> dict[str, Any]:
        """What :meth:`resume` needs to stop this session from another process (JSON-ready)."""
        return {
            r.target.name: {
                "profile_id": r.profile_id,
                "version": r.features.label if r.features.version else None,
                "plugin": bool(r.info and r.info.plugin),
                "device": r.info.device if r.info else None,
                "started_at": r.started_at,
            }
            for r in self.remotes
            if r.started
        }

    def resume(self, state: dict[str, Any]) -> list[str]:
        """Mark the servers listed in ``state`` (from :meth:`state`) as started by this session;
        returns the servers this session drives that ``state`` does not know."""
        unknown = []
        for remote in self.remotes:
            saved = state.get(remote.target.name)
            if not isinstance(saved, dict):
                unknown.append(remote.target.name)
                continue
            remote.profile_id = str(saved["profile_id"])
            info = ServerInfo(version=saved.get("version"), device=saved.get("device"), plugin=bool(saved.get("plugin")))
            self._prepare(remote, info)
            remote.started_at = float(saved["started_at"])
            remote.started = True
        return unknown

    # -- context managers -------------------------------------------------------------------

    def __enter__(self) -> SglangSession:
        _warned(self._start(True))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        results = _warned(self._stop())
        error = self._failure(results, "stop")
        if error is not None:
            if exc_type is None:
                raise error
            warnings.warn(str(error), stacklevel=2)  # never mask the user's exception with ours

    async def __aenter__(self) -> SglangSession:
        _warned(await self._astart(True))
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        results = _warned(await self._astop())
        error = self._failure(results, "stop")
        if error is not None:
            if exc_type is None:
                raise error
            warnings.warn(str(error), stacklevel=2)


def _warned(results: list[RemoteResult]) -> list[RemoteResult]:
    """Warn each server's notes, attributed to the caller of the public method that called this."""
    for result in results:
        for note in result.details.get("notes", ()):
            warnings.warn(f"profwin: {result.target}: {note}", WindowWarning, stacklevel=3)
    return results


def session(
    target: Any,
    spec: ProfileSpec | Window | str,
    *,
    version: str | None = None,
    api_key: str | None = None,
    timeout: float = 30.0,
) -> SglangSession:
    """A profiling session for ``spec``'s window on ``target``: an ``sglang.Engine``, a server URL,
    or a list of URLs (driven concurrently). ``spec`` may be a :class:`~profwin.ProfileSpec`, a
    :class:`~profwin.Window` or text like ``"20:80"``.

    ``version`` overrides the version the server reports; ``api_key`` is sent as a bearer token
    (SGLang's ``--admin-api-key`` or ``--api-key``); ``timeout`` bounds every call, in seconds.
    """
    if isinstance(spec, str):
        spec = ProfileSpec(window=Window.parse(spec))
    elif isinstance(spec, Window):
        spec = ProfileSpec(window=spec)
    elif not isinstance(spec, ProfileSpec):
        raise ConfigError(f"spec must be a ProfileSpec, a Window or text like '20:80' (got {spec!r})")
    targets: list[Target]
    if is_engine(target):
        req_type = features(version).req_type if version else True
        targets = [EngineTarget(target, timeout=timeout, req_type=req_type)]
    elif isinstance(target, str):
        targets = [HttpTarget(target, api_key=api_key, timeout=timeout)]
    elif isinstance(target, (list, tuple)) and all(isinstance(t, str) for t in target):
        targets = [HttpTarget(t, api_key=api_key, timeout=timeout) for t in target]
    else:
        raise ConfigError(f"must be an sglang Engine, a server URL or a list of URLs (got {target!r})", path="target")
    return SglangSession(targets, spec, version=version)
