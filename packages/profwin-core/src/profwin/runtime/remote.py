"""One remote session for every engine: start a window on engine objects or servers, stop, collect.

How it works, and why: docs/internals.md, ``profwin.runtime.remote``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import inspect
import json
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from profwin.arguments import checked, warn
from profwin.atomic import check_output_path, write_atomic
from profwin.discovery import backend as load_backend
from profwin.engine import Backend, EngineBusy, EnginePlan, EngineTarget, TargetContext, TargetError, TargetSkipped
from profwin.errors import ConfigError, ProfwinError, Terminated, WindowWarning, shown
from profwin.formats import FORMAT_KEY, Format
from profwin.inputs import parse_json, read_input
from profwin.json_form import to_json
from profwin.protocols import Artifact, RemoteResult, fan_out
from profwin.provenance import new_session_id, profwin_version, write_sidecar
from profwin.runtime.http import check_timeout
from profwin.spec import ProfileSpec, as_spec
from profwin.window import Window

__all__ = [
    "OnActive",
    "RemoteSession",
    "SessionError",
    "as_spec",
    "check_state_dir",
    "engine_targets",
    "folder_listing",
    "is_session_prefix",
    "remote_session",
    "resume_session",
    "session_function",
    "start_remote",
    "state_path",
    "stop_remote",
    "target_prefix",
]

T = TypeVar("T")
OnActive = Literal["error", "restart"]
"""What to do when an engine already profiles: report it, or stop it and start again."""

STATE_DIR = ".profwin-state"
MAX_STATE_BYTES = 1 << 20
"""Largest state file ``profwin stop`` reads (1 MiB; profwin writes a few KiB)."""
STATE_FORMAT = Format("profwin.state", version=3)
"""A target's state file: ``target``, ``plan``, ``before``, ``session``, ``prefix`` (the session's,
so that a stop given another is told which; version 2: without it; version 1: without ``"format"``
either, before formats had versions)."""
_KIND = re.compile(r"[a-z0-9][a-z0-9_.]{0,63}")  # a backend's name, in a state file's name
_LEFT_ALONE = "nothing was sent to the engine, and the state is kept for that stop"
_MAX_TARGETS = 16  # in flight at once


class SessionError(ProfwinError, RuntimeError):
    """Starting or stopping failed on at least one engine; ``results`` has every engine's outcome."""

    def __init__(self, message: str, results: Sequence[RemoteResult] = ()) -> None:
        super().__init__(message)
        self.results = list(results)


@checked
def folder_listing(directory: Path) -> dict[str, tuple[int, int]]:
    """Regular files in ``directory`` (not profwin's hidden ones): ``name -> (mtime_ns, bytes)``.
    How a session finds what an engine wrote since its start, in its own process or (a target's
    ``listing``) where the engine runs."""
    found: dict[str, tuple[int, int]] = {}
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        try:
            if not entry.name.startswith(".") and entry.is_file():
                info = entry.stat()
                found[entry.name] = (info.st_mtime_ns, info.st_size)
        except OSError:
            continue
    return found


# The plan's fields a RemoteResult's details repeat (the plan's own details follow them).
_PLAN_DETAILS = ("engine", "version", "version_source", "mechanism", "window", "records", "request", "notes")


class _Part:
    """One target's share of a session."""

    def __init__(self, target: EngineTarget, spec: ProfileSpec) -> None:
        self.target = target
        self.spec = spec
        self.plan: EnginePlan | None = None
        self.before: dict[str, int] = {}
        self.started = False
        self.unknown = ""  # why ``profwin stop`` has no state for this target (it still stops it)
        # Why ``profwin stop`` leaves this target alone: its start ran with other arguments (the
        # one that differs, and what to give instead).
        self.differs: tuple[str, str] | None = None
        self.skipped: RemoteResult | None = None  # left out at the start (TargetSkipped): its result
        self.session = ""  # the id of the session that started it (``profwin start`` saves it)

    def listing(self) -> dict[str, tuple[int, int]]:
        """The files in the plan's output directory where the engine runs: ``name -> (mtime_ns,
        bytes)``. A target whose engine writes on another machine lists them there (its
        ``listing``); any other one's are listed here, in the session's process."""
        assert self.plan is not None
        own = getattr(self.target, "listing", None)
        if own is not None:
            return {str(name): (int(mtime), int(size)) for name, (mtime, size) in own(self.plan).items()}
        return folder_listing(self.plan.output_dir)

    def new_files(self) -> list[Path]:
        assert self.plan is not None
        directory = self.plan.output_dir
        return [directory / name for name, (mtime, _) in sorted(self.listing().items()) if self.before.get(name) != mtime]

    def written(self) -> int:
        """Bytes of the files new since the start, as the engine left them."""
        return sum(size for name, (mtime, size) in self.listing().items() if self.before.get(name) != mtime)

    def mark(self) -> None:
        """Note what the output directory holds before the engine starts writing."""
        self.before = {name: mtime for name, (mtime, _) in self.listing().items()}

    def details(self, **extra: Any) -> dict[str, Any]:
        plan = self.plan
        if plan is None:
            return dict(extra)
        return {**to_json(plan, only=_PLAN_DETAILS), **dict(plan.details), **extra}

    def state(self) -> dict[str, Any]:
        assert self.plan is not None
        return {"target": self.target.name, "plan": self.plan.to_dict(), "before": self.before, "session": self.session}


@checked
class RemoteSession:
    """A profiling session on one or several live engines of one backend (docs/internals.md).

    ``prefixes``: each target's file prefix (default: the spec's, or ``PREFIX-N`` for several);
    :class:`profwin.RolloutProfiler` names files by rollout and engine this way. ``tags``: more
    provenance written beside every collected file (JSON values; the rollout profiler's rollout).

    Attributes:
        spec: the spec the session was opened with.
        results: one :class:`~profwin.RemoteResult` per target: start's, then stop's.
        artifacts: the files the session wrote (after the stop), each with the steps it holds.
    """

    def __init__(
        self,
        engine: Backend,
        targets: Sequence[EngineTarget],
        spec: ProfileSpec,
        *,
        version: str | None = None,
        timeout: float = 30.0,
        on_active: OnActive = "error",
        prefixes: Sequence[str] | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> None:
        if not targets:
            raise ConfigError("give at least one engine object or server URL", path="target")
        if on_active not in ("error", "restart"):
            raise ConfigError(f"must be 'error' or 'restart' (got {shown(on_active)})", path="on_active")
        self.engine = engine
        self.spec = spec
        self.version = version
        self.on_active = on_active
        self.results: list[RemoteResult] = []
        self.artifacts: list[Artifact] = []
        self.session_id = new_session_id()
        """Written with every collected trace (its provenance), so a folder tells sessions apart."""
        self.tags: dict[str, Any] = dict(tags or {})
        """More provenance for every collected file (:class:`profwin.RolloutProfiler`: the rollout)."""
        self._ctx = TargetContext(timeout=timeout)
        # Servers on one machine may share a directory and a rank: one prefix each tells them apart.
        if prefixes is not None:
            if len(prefixes) != len(targets):
                raise ConfigError(f"must give one prefix per target ({len(targets)}; got {len(prefixes)})", path="prefixes")
            self._parts = [_Part(t, spec.replace(prefix=p)) for t, p in zip(targets, prefixes, strict=True)]
        elif len(targets) == 1:
            self._parts = [_Part(targets[0], spec)]
        else:
            self._parts = [_Part(t, spec.replace(prefix=target_prefix(spec.prefix, i))) for i, t in enumerate(targets)]

    # -- start ------------------------------------------------------------------------------

    def _start_one(self, part: _Part) -> RemoteResult:
        name = part.target.name
        try:
            part.plan = part.target.plan(part.spec, self.version, self._ctx)
            if not hasattr(part.target, "listing"):  # a target that lists its files prepares their folder itself
                part.spec.replace(output_dir=part.plan.output_dir).prepare_output_dir()
            part.mark()
            try:
                part.target.start(part.plan, self._ctx)
            except EngineBusy:
                if self.on_active != "restart":
                    raise
                part.target.stop(part.plan, self._ctx)
                part.mark()
                part.target.start(part.plan, self._ctx)
        except TargetSkipped as exc:
            part.skipped = RemoteResult(
                target=name, ok=False, message=f"skipped: {exc}", details=part.details(**exc.details, skipped=True)
            )
            return part.skipped
        except TargetError as exc:
            return RemoteResult(target=name, ok=False, message=str(exc), details=part.details(**exc.details))
        except ConfigError as exc:
            return RemoteResult(target=name, ok=False, message=str(exc), details=part.details())
        except Exception as exc:  # a backend's bug, or an answer it could not take: this target's failure only
            return RemoteResult(target=name, ok=False, message=_failure(exc), details=part.details())
        part.started = True
        part.session = self.session_id
        plan = part.plan
        if plan.window.in_tokens:
            records = f"the steps that produce tokens {plan.window.start}:{'' if plan.window.end is None else plan.window.end}"
        else:
            records = "until the stop" if plan.records is None else f"engine steps {plan.records}"
        message = (
            f"started: {plan.engine} {plan.version or '(version unknown)'} records {records} of this session ({plan.mechanism})"
        )
        return RemoteResult(target=name, ok=True, message=message, details=part.details())

    def _start(self) -> list[RemoteResult]:
        try:
            results = fan_out(self._start_one, self._parts, max_workers=_MAX_TARGETS, thread_prefix=f"profwin-{self.engine.name}")
        except BaseException:  # Ctrl-C, SIGTERM: no engine is left profiling behind the user's back
            if any(p.started for p in self._parts):
                self._stop_all()
            raise
        self.results = results
        failed = _failed(results)
        if failed and any(p.started for p in self._parts):
            # All or none: the engines that started are stopped again (their files are not kept).
            # An engine skipped for a reason of its own does not count (TargetSkipped).
            self._roll_back(f"{len(failed)} of {len(results)} engine(s) failed to start, so none profiles")
        return self.results

    def _roll_back(self, why: str) -> None:
        """Stop every started target again; the result of each says it was rolled back and why."""
        stops = {r.target: r for r in self._stop_all()}
        self.results = [
            r if r.target not in stops else RemoteResult(
                target=r.target, ok=False, message=f"rolled back: {why}" + ("" if stops[r.target].ok else f"; stopping it failed: {stops[r.target].message}"),
                details={**r.details, "rolled_back": True},
            )
            for r in self.results
        ]  # fmt: skip

    @contextlib.contextmanager
    def _or_roll_back(self, what: str) -> Iterator[None]:
        """A step of profwin's own after engines started (reporting, saving the state): when it
        fails in any way (an error, a full disk, Ctrl-C, SIGTERM, a bug), the started engines are
        stopped again and their results say so before the failure goes on."""
        try:
            yield
        except BaseException as exc:
            if any(p.started for p in self._parts):
                self._roll_back(f"{what} failed ({_cause(exc)}), so none profiles")
            raise

    def start(self, *, check: bool = True) -> list[RemoteResult]:
        """Start on every target concurrently, all or none: when one fails, the targets that
        started are stopped again and every result says what happened. With ``check`` that is a
        :class:`SessionError`; without, the results are returned."""
        results = self._start()
        failed = _failed(results) or (_skipped(results) if len(_skipped(results)) == len(results) else [])
        if check and failed:
            lines = "\n".join(f"  {r.target}: {r.message}" for r in failed)
            raise SessionError(
                f"profwin: could not start profiling on {len(failed)} of {len(results)} engine(s):\n{lines}", results
            )
        if not failed:
            with self._or_roll_back("reporting the start"):  # warnings may be errors (-W error)
                _warn(results, "notes")
                for r in _skipped(results):
                    warn(f"profwin: {r.target}: {r.message}", WindowWarning)
        return results

    # -- stop -------------------------------------------------------------------------------

    def _stop_unknown(self, part: _Part) -> RemoteResult:
        """``profwin stop`` without the state of a ``profwin start``: stop the engine's profiler all
        the same (a crashed start may have left it running), but collect nothing."""
        name = part.target.name
        part.unknown, why = "", part.unknown
        plan = None
        try:
            plan = part.target.plan(part.spec, self.version, self._ctx)
            part.target.stop(plan, self._ctx)
        except TargetSkipped as exc:
            return RemoteResult(target=name, ok=False, message=f"skipped: {exc}", details={**exc.details, "skipped": True})
        except Exception as exc:
            details = exc.details if isinstance(exc, TargetError) else {}
            message = str(exc) if isinstance(exc, (TargetError, ConfigError)) else _failure(exc)
            where = _trace_dir(plan, part)
            return RemoteResult(
                target=name, ok=False, message=f"{why}; stopping it anyway failed: {message}; {where}", details=details
            )
        return RemoteResult(
            target=name, ok=False, message=f"{why}; stopped its profiler, collected no files; {_trace_dir(plan, part)}"
        )

    def _stop_one(self, part: _Part) -> RemoteResult:
        name = part.target.name
        if part.differs is not None:
            argument, why = part.differs
            return RemoteResult(target=name, ok=False, message=why, details={"differs": argument})
        if part.unknown:
            return self._stop_unknown(part)
        if not part.started or part.plan is None:
            return RemoteResult(target=name, ok=False, message="not started", details=part.details())
        part.started = False
        plan = part.plan
        try:
            stopped = part.target.stop(plan, self._ctx)
            written = part.written()  # before a backend trims anything
            artifacts, notes = part.target.collect(plan, part.new_files, stopped=stopped)
        except TargetError as exc:
            details = part.details(**exc.details)
            if details.get("engine_error"):
                details["nothing_recorded"] = f"the engine reported an error: {_excerpt(str(details['engine_error']))}"
            return RemoteResult(target=name, ok=False, message=str(exc), details=details)
        except Exception as exc:  # one target's failure never hides the others' results
            return RemoteResult(target=name, ok=False, message=_failure(exc), details=part.details())
        engine_error = self._engine_errors(part) or getattr(part.target, "engine_error", None) or plan.details.get("engine_error")
        ran = getattr(part.target, "ran", None)
        reason = nothing_recorded(plan, artifacts, written=written, ran=ran, engine_error=engine_error)
        said = [f"the engine reported an error: {_excerpt(str(engine_error))}"] if engine_error and not reason else []
        notes = notes + said + ([] if reason else _window_notes(plan, artifacts))
        _record_provenance(plan, artifacts, part.session or self.session_id, self.tags)
        traces = sum(a.kind == "trace" for a in artifacts)
        message = f"stopped; {len(artifacts)} file(s), {traces} trace(s) in {plan.output_dir}"
        return RemoteResult(
            target=name,
            ok=True,
            message=message + "".join(f"; {n}" for n in notes),
            artifacts=tuple(artifacts),
            details=part.details(
                stop_notes=notes,
                stopped=stopped,
                written_bytes=written,
                **({"nothing_recorded": reason} if reason else {}),
                **({"engine_error": str(engine_error)} if engine_error else {}),
            ),
        )

    def _engine_errors(self, part: _Part) -> str:
        """What the engine said went wrong inside it during the session (``""``: nothing, or it
        cannot tell); asking never fails the stop."""
        ask = getattr(part.target, "engine_errors", None)
        if ask is None or part.plan is None:
            return ""
        try:
            return _excerpt("; ".join(str(e) for e in ask(part.plan, self._ctx)), limit=2000)
        except Exception:
            return ""

    def _stop_all(self) -> list[RemoteResult]:
        started = [p for p in self._parts if p.started or p.unknown or p.differs]
        return fan_out(self._stop_one, started, max_workers=_MAX_TARGETS, thread_prefix=f"profwin-{self.engine.name}")

    def stop(self, *, check: bool = False) -> list[RemoteResult]:
        """Stop every started target concurrently and collect this session's files. A window that
        ran only in part, or not at all, is a :class:`~profwin.errors.WindowWarning`. The results
        keep the engines skipped at the start (their start's result), in the targets' order."""
        running = [bool(p.started or p.unknown or p.differs) for p in self._parts]
        stopped = iter(self._stop_all())
        results: list[RemoteResult] = []
        for part, was in zip(self._parts, running, strict=True):
            if was:
                results.append(next(stopped))
            elif part.skipped is not None:
                results.append(part.skipped)
        self.results = results
        self.artifacts = [a for r in results for a in r.artifacts]
        _warn(results, "stop_notes")
        failed = _failed(results)
        if check and failed:
            lines = "\n".join(f"  {r.target}: {r.message}" for r in failed)
            raise SessionError(f"profwin: stopping failed on {len(failed)} of {len(results)} engine(s):\n{lines}", results)
        return results

    # -- another process stops what this one started ---------------------------------------------

    def _state_file(self, part: _Part) -> Path:
        return state_path(part.spec, self.engine.name, part.target.name)

    def state_files(self) -> list[Path]:
        """Where :meth:`save_state` writes each target's state."""
        return [self._state_file(part) for part in self._parts]

    def save_state(self) -> list[Path]:
        """Write what :func:`resume_session` needs for each started target; returns the files."""
        written = []
        for part in self._parts:
            if part.started:
                path = self._state_file(part)
                check_state_dir(path.parent)
                state = {**part.state(), "prefix": self.spec.prefix}
                written.append(write_atomic(path, json.dumps(STATE_FORMAT.stamp(state)).encode()))
        return written

    def _resume(self) -> None:
        """Take over the targets :meth:`save_state` wrote; the others are stopped without collecting,
        but for those a start ran with other arguments: they are left alone, their state kept."""
        for part in self._parts:
            _load_state(self._state_file(part), part, self.engine, self.spec)

    def _forget(self) -> None:
        for part in self._parts:
            if part.differs is not None:
                continue
            with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # none, or no state folder (said so)
                self._state_file(part).unlink()

    # -- context managers -------------------------------------------------------------------

    def __enter__(self) -> RemoteSession:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._exit(failed=exc_type is not None)

    def _exit(self, *, failed: bool) -> None:
        try:
            self.stop(check=True)
        except SessionError as error:
            if not failed:
                raise
            warn(str(error))  # never mask the user's exception with ours

    async def __aenter__(self) -> RemoteSession:
        self._ctx.loop = asyncio.get_running_loop()
        await off_loop(self.start)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await off_loop(functools.partial(self._exit, failed=exc_type is not None))


async def off_loop(call: Callable[[], T]) -> T:
    """``call()`` in a thread of profwin's own, not the loop's default executor: engines use that
    executor for thread-bound work (vLLM's AsyncLLM starts and stops its frontend torch profiler
    with ``asyncio.to_thread``, and torch crashes when the stop lands on another thread than the
    start), so a thread profwin holds there would shift which thread they get."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="profwin-session") as pool:
        return await asyncio.get_running_loop().run_in_executor(pool, call)


def target_prefix(prefix: str, index: int) -> str:
    """The file prefix of the ``index``-th of several targets of one session: servers on one
    machine may share a directory and a rank, so each gets ``PREFIX-N``."""
    return f"{prefix[: 127 - len(str(index))]}-{index}"


@checked
def is_session_prefix(prefix: object, spec: ProfileSpec) -> bool:
    """Whether ``prefix`` is one a session of ``spec`` gives a target: ``spec.prefix`` itself,
    or ``PREFIX-N`` (:func:`target_prefix`) — for a backend's ``check_state``, since a target's
    position among the others may differ between ``profwin start`` and ``profwin stop`` (a
    router's workers join and leave)."""
    if not isinstance(prefix, str):
        return False
    _, _, index = prefix.rpartition("-")
    return prefix == spec.prefix or (index.isascii() and index.isdigit() and prefix == target_prefix(spec.prefix, int(index)))


def state_path(spec: ProfileSpec, kind: str, name: str) -> Path:
    """The state file of ``name`` (a target's or a router's URL) for ``kind`` under ``spec``'s
    output directory: a readable slug of the name and a digest of all of it, so that no two names
    share a file (``http://h/a/b`` and ``http://h/a_b`` have one slug)."""
    slug = "".join(c if c.isalnum() else "_" for c in name.split("://", 1)[-1])[:80]
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return spec.output_dir / STATE_DIR / f"{kind}-{slug}-{digest}.json"


def check_state_dir(folder: Path) -> None:
    """Make the state folder (``--out/.profwin-state``) if it is missing and check that state
    files can be written in it: a directory, not a symbolic link, writable. Else a
    :class:`ConfigError` naming it; ``profwin start`` calls this before anything starts."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        raise ConfigError(
            f"cannot keep the session's state for profwin stop in {str(folder)!r}: {exc.strerror or exc}", path="output_dir"
        ) from None
    if not stat.S_ISDIR(info.st_mode) or not os.access(folder, os.W_OK | os.X_OK):
        what = (
            "a symbolic link"
            if stat.S_ISLNK(info.st_mode)
            else "not a directory"
            if not stat.S_ISDIR(info.st_mode)
            else "read-only"
        )
        raise ConfigError(f"cannot keep the session's state for profwin stop in {str(folder)!r}: it is {what}", path="output_dir")


@checked
def read_state(path: Path, form: Format, *, what: str = "state file") -> dict[str, Any]:
    """The document in the state file ``path`` that profwin wrote in the format ``form``: read
    bounded (at most :data:`MAX_STATE_BYTES`, a regular file only: a FIFO, a device or a link to
    one is refused at once), JSON within the spec bounds (100 levels, 100,000 values), an object,
    of a version ``form`` reads (its ``"format"`` key taken off). Anything else is a
    :class:`ConfigError` saying what is wrong; :class:`FileNotFoundError` when there is none.
    Every state file profwin reads back goes through here: a target's, a router's record."""
    data = parse_json(read_input(path, limit=MAX_STATE_BYTES, what=what, pipes=False), source=str(path))
    if not isinstance(data, dict):
        raise ConfigError(f"must be a JSON object (got a JSON {type(data).__name__})")
    form.check(data)
    data.pop(FORMAT_KEY, None)
    return data


def _load_state(path: Path, part: _Part, engine: Backend, spec: ProfileSpec) -> None:
    """Restore one target's part from its state file; or say why not: ``part.differs`` when the
    start ran with another engine, router or prefix than this stop's (nothing is done to the
    target), else ``part.unknown``."""
    if not os.path.lexists(path):
        _no_state(path, part, engine.name)
        return
    try:
        data = read_state(path, STATE_FORMAT)
        plan, before = _checked_state(data, part)
    except (ConfigError, OSError) as exc:
        part.unknown = _damaged(path, exc)
        return
    try:
        _backend_check(engine, plan, spec)
    except ConfigError as exc:
        saved = data.get("prefix", spec.prefix)
        if saved == spec.prefix:
            part.unknown = _damaged(path, exc)
        else:  # the backend refuses what this stop's prefix would collect: the start had another
            said = f"profwin start ran this session with prefix {saved!r}, not {spec.prefix!r} ({path})"
            part.differs = ("prefix", f"{said}: run profwin stop with --prefix {saved}; {_LEFT_ALONE}")
        return
    part.plan, part.before, part.started = plan, before, True
    part.session = str(data.get("session") or "")


def _backend_check(engine: Backend, plan: EnginePlan, spec: ProfileSpec) -> None:
    """The backend's check of the fields only it knows the meaning of, as a :class:`ConfigError`
    located in ``plan`` (its own bug too: the state is refused all the same)."""
    check = getattr(engine, "check_state", None)
    if check is None:
        return
    try:
        check(plan, spec)
    except ConfigError as exc:
        raise exc.at("plan") from None
    except Exception as exc:
        raise ConfigError(f"backend {engine.name!r} could not check it: {_failure(exc)}", path="plan") from None


def _damaged(path: Path, exc: ConfigError | OSError) -> str:
    why = str(exc) if isinstance(exc, ConfigError) else f"cannot read it: {exc.strerror or exc}"
    return f"the state file {path} is damaged or not profwin's ({_excerpt(why)}), so profwin start's session is not known"


def _no_state(path: Path, part: _Part, engine: str) -> None:
    """Why there is no state file at ``path``, from one listing of the state folder: in
    ``part.differs``, a start that left a state for this URL under another engine's name or as a
    router's record; else in ``part.unknown``, a damaged state folder (not a folder, a link,
    unreadable), a file for this engine under another name (another profwin's), or no ``profwin
    start`` with this ``--out`` for this URL (the URLs it ran for are named)."""
    folder = path.parent
    not_known = "so profwin start's session is not known"
    try:
        info = os.lstat(folder)
        names = sorted(os.listdir(folder)) if stat.S_ISDIR(info.st_mode) else None
    except FileNotFoundError:
        names = []
    except OSError as exc:
        part.unknown = f"the state folder {folder} cannot be read ({exc.strerror or exc}), {not_known}"
        return
    if names is None:
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        part.unknown = f"the state folder {folder} is damaged (it is {what}), {not_known}"
        return
    part.differs = _started_otherwise(names, path, engine, part.target.name)
    if part.differs is not None:
        return
    stem = path.name.rsplit("-", 1)[0] + "-"
    others = [name for name in names if name.startswith(stem)]
    if others:
        part.unknown = (
            f"no state file {path.name} in {folder}, but it holds {shown(others[0])} for this engine under another name "
            f"(written by another profwin version?), {not_known}"
        )
        return
    held = _started_targets(folder, [name for name in names if name.startswith(f"{engine}-") and name.endswith(".json")])
    if held:
        part.unknown = (
            f"no session started by profwin for this URL in {part.spec.output_dir}, which holds profwin start's state for "
            f"{', '.join(held)} (another spelling of this server's URL? give profwin stop the --url profwin start had)"
        )
    else:
        part.unknown = (
            f"no session started by profwin for this engine in {part.spec.output_dir} "
            "(run profwin start with the same --out first)"
        )


def _started_otherwise(names: list[str], path: Path, engine: str, target: str) -> tuple[str, str] | None:
    """The argument this stop gives otherwise than the start that left, among the state folder's
    ``names``, a state for this URL under another engine's name (``--engine``) or a router's
    record (``--router``)."""
    tail = path.name.removeprefix(engine)  # -<slug>-<digest>.json: this URL's, whatever the engine
    for kind in (name.removesuffix(tail) for name in names if name.endswith(tail)):
        router = kind.removeprefix("router-")
        if router != kind and _KIND.fullmatch(router):
            said = f"{target} is a router that profwin start ran with --router (--engine {router})"
            return "router", f"{said}: run profwin stop with --router {target} --engine {router}; {_LEFT_ALONE}"
        if kind != engine and _KIND.fullmatch(kind):
            said = f"profwin start ran this server's session with --engine {kind}, not {engine}"
            return "engine", f"{said}: run profwin stop with --engine {kind}; {_LEFT_ALONE}"
    return None


def _started_targets(folder: Path, names: list[str], most: int = 3) -> list[str]:
    """The URLs the first ``most`` of the state files ``names`` in ``folder`` are for, as they say."""
    targets = []
    for name in names[:most]:
        try:
            target = read_state(folder / name, STATE_FORMAT).get("target")
        except (ConfigError, OSError):
            continue
        if isinstance(target, str):
            targets.append(shown(target))
    return targets


def _trace_dir(plan: EnginePlan | None, part: _Part) -> str:
    """Where the engine writes its trace, for a stop that collects nothing: the user collects it."""
    folder = plan.output_dir if plan is not None else part.spec.output_dir
    return f"the engine writes its trace in {folder} (look there for what it recorded)"


def _checked_state(data: Any, part: _Part) -> tuple[EnginePlan, dict[str, int]]:
    """The plan and listing of a state file, checked before anything acts on them: typed, for
    this target, and with the output directory inside the session's own (``--out``)."""
    keys = set(data) if isinstance(data, dict) else set()
    if not {"target", "plan", "before"} <= keys <= {"target", "plan", "before", "session", "prefix"}:
        raise ConfigError("must be an object with exactly 'target', 'plan', 'before' and (optionally) 'session' and 'prefix'")
    if "prefix" in data:
        part.spec.replace(prefix=data["prefix"])  # a prefix profwin accepts, or a ConfigError at "prefix"
    session = data.get("session", "")
    if not isinstance(session, str) or not re.fullmatch(r"[\w.:-]{0,100}", session):
        raise ConfigError(f"must be a session id (letters, digits, '.', ':', '-', '_'; got {shown(session)})", path="session")
    if data["target"] != part.target.name:
        raise ConfigError(f"is for {shown(data['target'])}, not {shown(part.target.name)}", path="target")
    if not isinstance(data["plan"], dict):
        raise ConfigError("must be an object", path="plan")
    plan = EnginePlan.from_dict(data["plan"])
    session_dir = part.spec.output_dir.resolve()
    if not plan.output_dir.resolve().is_relative_to(session_dir):
        raise ConfigError(
            f"names {shown(str(plan.output_dir))}, outside this session's directory {str(session_dir)!r}", path="plan.output_dir"
        )
    before = data["before"]
    if not isinstance(before, dict) or not all(
        isinstance(k, str) and re.fullmatch(r"[^/\\\x00]{1,255}", k) and k not in (".", "..") and type(v) is int
        for k, v in before.items()
    ):
        raise ConfigError("must map file names (no directories) to integer modification times", path="before")
    return plan, dict(before)


def _skipped(results: Sequence[RemoteResult]) -> list[RemoteResult]:
    """The engines left out of the session for a reason of their own (:class:`TargetSkipped`)."""
    return [r for r in results if not r.ok and r.details.get("skipped")]


def _failed(results: Sequence[RemoteResult]) -> list[RemoteResult]:
    """The engines that failed to start (a skipped one did not fail: it was left alone)."""
    return [r for r in results if not r.ok and not r.details.get("skipped")]


def _cause(exc: BaseException) -> str:
    """What went wrong, in a few words, for a rolled-back result."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, Terminated):
        return "terminated"
    if isinstance(exc, ProfwinError):
        return _excerpt(str(exc))
    return _failure(exc)


def _failure(exc: BaseException) -> str:
    """One line for an unexpected exception of one target (a bounded excerpt of its text)."""
    return f"failed unexpectedly ({type(exc).__name__}: {_excerpt(str(exc))})"


def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text):,} characters)"


def nothing_recorded(
    plan: EnginePlan, artifacts: Sequence[Artifact], *, written: int, ran: int | None, engine_error: object = None
) -> str | None:
    """Why one engine's stop brought back no trace, in one line; ``None`` when it brought one.

    By what profwin knows, most certain first: the engine's own error (``engine_error``: a target
    reports it as an attribute after the stop, in a :class:`TargetError`'s details or in the
    plan's details); the steps the engine ran in the session (``ran``, where the target counts
    them) against the window's start, with the last step seen; files written but none of them a
    trace; else the two causes that remain."""
    if any(a.kind == "trace" for a in artifacts):
        return None
    window, where = plan.window, plan.output_dir
    if engine_error:
        return f"the engine reported an error: {_excerpt(str(engine_error))}"
    if plan.mechanism in ("by-stage", "none"):
        return None
    unit = "window"  # a token window says so itself ("20:80 tokens")
    if ran is not None and not window.in_tokens and ran <= window.start:
        last = f"the last step seen was step {ran - 1}" if ran else "it ran no step"
        return f"{unit} {window} was never reached: the engine ran {ran} step(s) in this session ({last}); recording starts at step {window.start}"
    if ran is not None and not window.in_tokens:
        return f"the engine ran {ran} step(s), past the window's start {window.start}, but wrote no trace in {where}: it writes elsewhere"
    if written:
        return f"the engine wrote {written:,} bytes in {where} since the start, but no trace of {unit} {window}"
    if window.in_tokens:
        return (
            f"no trace was written for {unit} {window}: no request produced a token with an index in "
            f"[{window.start}, {'' if window.end is None else window.end}) while the session ran, or the engine writes elsewhere than {where}"
        )
    return (
        f"no trace was written for window {window}: it was never reached (the engine ran fewer than "
        f"{window.start + 1} step(s) in this session), or the engine writes elsewhere than {where}"
    )


def _window_notes(plan: EnginePlan, artifacts: list[Artifact]) -> list[str]:
    """What the user must know when the traces hold less than the window."""
    window = plan.window
    traces = [a for a in artifacts if a.kind == "trace"]
    if plan.mechanism in ("by-stage", "none"):
        return []
    if not traces and window.in_tokens:
        return [
            f"no trace was written for window {window}: no request produced a token with an index in "
            f"[{window.start}, {'' if window.end is None else window.end}) while the session ran, or the engine writes elsewhere"
        ]
    if not traces:
        return [
            f"no trace was written for window {window}: window {window} was never reached (the engine ran fewer than "
            f"{window.start + 1} step(s) in this session), or it writes elsewhere"
        ]
    if window.in_tokens:  # steps are the engine's choice (profwin.runtime.tokens): nothing to compare in steps
        return []
    return [
        f"the session ended inside window {window}; {a.path.name} holds steps {a.steps}"
        for a in traces
        if a.steps is not None
        and a.steps.start == window.start  # a trace elsewhere in the session: its backend says why
        and window.end is not None
        and a.steps.end is not None
        and a.steps.end < window.end
    ]


def _record_provenance(plan: EnginePlan, artifacts: list[Artifact], session: str, tags: Mapping[str, Any]) -> None:
    """A sidecar next to each collected trace and session timeline: the engine wrote the file, so
    what profwin knows of it (window, steps, engine, version, rank, session, and the session's
    ``tags``: a rollout profiler's rollout) travels beside it. A timeline's ``trace_steps`` are
    the steps its rank's trace holds: where the window sits in it."""
    traced = {a.rank: a.steps for a in artifacts if a.kind == "trace" and a.steps is not None}
    for artifact in artifacts:
        if artifact.kind not in ("trace", "timeline") or not artifact.path.is_file():
            continue
        info = {
            "window": str(plan.window), "steps": None if artifact.steps is None else str(artifact.steps),
            "first_step": None if artifact.steps is None else artifact.steps.start, "engine": plan.engine,
            "engine_version": plan.version, "producer": artifact.producer, "rank": artifact.rank, "session": session,
            "version": profwin_version(), **tags,
        }  # fmt: skip
        if artifact.kind == "timeline":
            trace_steps = traced.get(artifact.rank)
            info.update(kind="timeline", first_step=None, trace_steps=None if trace_steps is None else str(trace_steps))
        try:
            write_sidecar(artifact.path, info)
        except (OSError, ConfigError) as exc:  # the trace is there all the same; say why it has no sidecar
            warn(f"profwin: could not write the provenance of {artifact.path}: {exc}")


def _warn(results: list[RemoteResult], key: str) -> None:
    for result in results:
        said = result.details.get(key, ())
        if key == "stop_notes" and result.details.get("nothing_recorded"):
            said = [*said, f"nothing was recorded: {result.details['nothing_recorded']}"]
        for note in said:
            warn(f"profwin: {result.target}: {note}", WindowWarning)


def engine_targets(engine: Backend, target: Any, *, api_key: str | None, timeout: float) -> list[EngineTarget]:
    """The targets a session drives: one per item of ``target`` (a URL, an engine object, or a
    list of them), made by ``engine``; an item that already is an :class:`EngineTarget` (an engine
    a plugin reaches its own way, such as one living in a Ray actor) is used as it is."""
    items = list(target) if isinstance(target, (list, tuple)) else [target]
    if not items:
        raise ConfigError("give at least one engine object or server URL", path="target")
    return [item if isinstance(item, EngineTarget) else engine.target(item, api_key=api_key, timeout=timeout) for item in items]


@checked
def remote_session(
    engine: str | Backend,
    target: Any,
    spec: ProfileSpec | Window | str,
    *,
    version: str | None = None,
    api_key: str | None = None,
    timeout: float = 30.0,
    on_active: OnActive = "error",
) -> RemoteSession:
    """A session (``with`` or ``async with``) profiling ``spec``'s window on live engines.

    Args:
        engine: a backend name (``"vllm"``, ``"sglang"``) or a loaded backend.
        target: an engine object (``vllm.LLM``, ``AsyncLLM``, ``sglang.Engine``), a server URL, an
            :class:`~profwin.plugin.engines.EngineTarget`, or a list of them (started and stopped concurrently).
        spec: a :class:`~profwin.ProfileSpec`, a :class:`~profwin.Window`, or text like ``"20:80"``.
        version: the engine version, for engines that cannot be asked.
        api_key: bearer token for servers started with an API key.
        timeout: seconds for each request to an engine (a total deadline, not per read).
        on_active: an engine already profiling is an ``"error"``, or is stopped and started again.
    """
    backend = load_backend(engine) if isinstance(engine, str) else engine
    timeout = check_timeout(timeout)
    targets = engine_targets(backend, target, api_key=api_key, timeout=timeout)
    return RemoteSession(backend, targets, as_spec(spec), version=version, timeout=timeout, on_active=on_active)


@checked
def session_function(backend: Backend, doc: str) -> Callable[..., RemoteSession]:
    """A plugin's own ``session(target, spec, ...)``: :func:`remote_session` with ``backend`` and
    the same keyword arguments (and signature), documented by ``doc`` (``profwin_vllm.session``)."""

    def session(target: Any, spec: ProfileSpec | Window | str, **options: Any) -> RemoteSession:
        return remote_session(backend, target, spec, **options)

    signature = inspect.signature(remote_session)
    session.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])  # type: ignore[attr-defined]
    session.__doc__ = doc
    return checked(session)


def resume_session(
    engine: str | Backend,
    target: Any,
    spec: ProfileSpec,
    *,
    version: str | None = None,
    api_key: str | None = None,
    timeout: float = 30.0,
) -> RemoteSession:
    """The session ``profwin start`` saved for these targets (in ``spec.output_dir``), ready to
    :meth:`~RemoteSession.stop`; the state files are removed. A target without (readable) state
    is still stopped, its files are not collected, and its result says why and is not ok."""
    session = remote_session(engine, target, spec, version=version, api_key=api_key, timeout=timeout)
    session._resume()
    session._forget()
    return session


def start_remote(
    engine: str,
    urls: Sequence[str],
    spec: ProfileSpec,
    *,
    record: tuple[Path, Callable[[list[RemoteResult]], Any]] | None = None,
    **kwargs: Any,
) -> list[RemoteResult]:
    """``profwin start``: start on every URL, keep the state ``profwin stop`` needs.

    All or none to the end: what can be checked is checked before anything starts (the state
    folder and files can be written, and no session a start began is open there); a failure after
    an engine started (saving the state: a full disk, a folder removed; Ctrl-C or SIGTERM; a bug of
    profwin's) stops the engines that started, removes the state written, and is the result of each
    (``rolled back: ...``; Ctrl-C and SIGTERM go on after that). ``record``: ``(path, make)``, more state written beside the session's
    (``make(results)`` as JSON: the router's list of workers), inside the same all or none."""
    session = remote_session(engine, list(urls), spec, **kwargs)
    paths = session.state_files() + ([record[0]] if record else [])
    for path in paths:  # before anything starts
        check_state_dir(path.parent)
        check_output_path(path)
        if os.path.lexists(path):  # another start would cost that session its window (SGLang answers it 200 and ignores it)
            raise ConfigError(
                f"a session profwin start began is still open there ({path}): end it with profwin stop (the same --engine, "
                "--url or --router, and --out) before starting another; for a server restarted since, that stop says so "
                "and ends it",
                path="output_dir",
            )
    results = session.start(check=False)  # all or none, as remote_session: nothing to save on a failure
    if not any(r.ok for r in results):
        return results
    written: list[Path] = []
    try:
        with session._or_roll_back("saving the session's state for profwin stop"):
            written += session.save_state()
            if record is not None:
                written.append(write_atomic(record[0], json.dumps(record[1](results)).encode()))
    except BaseException as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        if not isinstance(exc, Exception):
            raise
        return session.results
    return results


def stop_remote(engine: str, urls: Sequence[str], spec: ProfileSpec, **kwargs: Any) -> list[RemoteResult]:
    """``profwin stop``: stop what ``profwin start`` began on these URLs and collect the files."""
    kwargs.pop("on_active", None)
    return resume_session(engine, list(urls), spec, **kwargs).stop()
