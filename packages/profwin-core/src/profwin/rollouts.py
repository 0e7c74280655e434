"""Profile a trainer's chosen rollouts: one remote session around each of them, nothing around the others.

How it works, and why: docs/internals.md, ``profwin.rollouts``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import attrs
from attrs import Factory, field, frozen

from profwin.arguments import checked, warn
from profwin.errors import ConfigError, PluginError, ProfwinError, WindowWarning, shown, unknown_key
from profwin.inputs import check_timeout, normalize_url
from profwin.json_form import JsonForm
from profwin.options import flag
from profwin.protocols import Artifact, PluginSpec, RemoteResult
from profwin.selection import Rollouts
from profwin.spec import ProfileSpec, as_spec
from profwin.window import Window

if TYPE_CHECKING:  # the HTTP client and the backends are imported at the first chosen rollout only
    import importlib.machinery

    import profwin.engine  # as a dotted hint, which the argument check resolves only for a value that needs it
    from profwin.runtime.remote import OnActive, RemoteSession

__all__ = [
    "DEFAULT_OUTPUT_DIR",
    "RolloutProfiler",
    "RolloutRecord",
    "RolloutSettings",
    "Rollouts",
    "TrainerIntegration",
    "spec_setting",
]

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
    """Profiles the chosen rollouts of a trainer on its engines (docs/internals.md).

    Args:
        engine: a backend name (``"sglang"``, ``"vllm"``) or a loaded backend.
        spec: a :class:`~profwin.ProfileSpec`, a :class:`~profwin.Window`, or text like ``"20:80"``;
            its ``prefix`` names the tool in the files (``profwin``), its window counts from each
            rollout's session start.
        rollouts: which rollouts (any form :meth:`Rollouts.of` takes).
        engines: server URLs, engine objects or :class:`~profwin.plugin.engines.EngineTarget` objects, or a
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
        from profwin.runtime.remote import RemoteSession, engine_targets
        from profwin.runtime.router import router as ask_router

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
        from profwin.runtime.router import against_router

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
            warn(f"profwin: {record.message}", WindowWarning)


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

        from profwin.runtime.remote import off_loop

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
        from profwin.runtime.remote import off_loop

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


# -- trainer integrations: what every one shares ---------------------------------------------------

DEFAULT_OUTPUT_DIR = "/tmp/profwin-rollouts"
"""Where a profiled rollout's files go when a trainer's spec names no ``output_dir``: a path every
node has, resolved in each process that writes (a trainer's engines often run on other nodes, in
Ray workers whose working folder is Ray's), and the one default of every trainer integration but
verl, which keeps verl's own ``save_path``."""

_S = TypeVar("_S", bound="RolloutSettings")
_T = TypeVar("_T")


def spec_setting(value: object, *, path: str = "spec") -> dict[str, Any]:
    """A trainer's spec setting, "a window or a JSON spec": a window's text (``"20:80"``,
    ``"2:6 tokens"``), a :class:`~profwin.Window`, a spec as JSON text or a mapping, as the spec's
    mapping form, checked now (:func:`profwin.plugin.trainers.spec_mapping`: a bad one fails where it is
    given, not in a worker). It must say the window; ``output_dir`` is kept as written (default
    :data:`DEFAULT_OUTPUT_DIR`), for each process to resolve (:meth:`RolloutSettings.spec_here`).
    Errors are :class:`~profwin.ConfigError` at ``path``, the name the trainer gives the setting
    (it checks its own arguments, as :func:`~profwin.plugin.trainers.spec_mapping` does)."""
    from profwin.config import spec_mapping  # it imports discovery: not for a rollout that is not chosen

    if not isinstance(path, str):
        raise ConfigError(f"must be a str (got {shown(path)})", path="path")
    if value is None:
        raise ConfigError("must say the window to record in each profiled rollout, e.g. '20:80'", path=path)
    return spec_mapping(str(value) if isinstance(value, Window) else value, path=path, output_dir=DEFAULT_OUTPUT_DIR)


def _rollouts(value: object) -> Rollouts:
    return Rollouts.of(value, path="rollouts")


def _spec(value: object) -> dict[str, Any]:
    return spec_setting(value, path="spec")


@frozen(kw_only=True)
class RolloutSettings(JsonForm):
    """What a trainer integration that profiles rollouts is told: the base of each one's settings
    type (``SlimeProfiling``, ``OpenRLHFProfiling``, ``TRLProfiling``), which adds the trainer's own
    fields. Checked however it is made (the constructor, :meth:`read`, ``from_dict``); its JSON
    form is the one converter's (``to_dict`` / ``from_dict``), which is how it travels to a
    trainer's workers.

    Attributes:
        rollouts: which rollouts are profiled (any form :meth:`Rollouts.of` takes).
        spec: what each records, as the spec's mapping (:func:`spec_setting`), ``output_dir`` as
            written: :meth:`spec_here` resolves it in the process that profiles.
        timeout: seconds each call to an engine may take (default: the class's
            ``default_timeout``, 30; a trainer whose stops write long traces sets more).
        timeline: also record each profiled rollout's session timeline beside its window
            (``record: [timeline]`` in the spec; each record names its files). Every trainer's one
            key for it (``--profwin.timeline``, ``profwin_timeline``, ``timeline=``) lands here.
    """

    default_timeout: ClassVar[float] = 30.0
    rollouts: Rollouts = field(converter=_rollouts)
    spec: Mapping[str, Any] = field(converter=_spec, hash=False)
    timeout: float = field(default=Factory(lambda self: type(self).default_timeout, takes_self=True), converter=check_timeout)
    timeline: bool = field(default=False, validator=flag)

    def spec_here(self) -> ProfileSpec:
        """The spec in this process: ``output_dir`` with ``$VARIABLES`` and ``~`` resolved here
        (each node its own: ``$NODE_DIR/traces``)."""
        from profwin.config import spec_from_mapping

        data = dict(self.spec)
        data["output_dir"] = os.path.expanduser(os.path.expandvars(str(data["output_dir"])))
        spec = spec_from_mapping(data, path="spec")
        return spec.replace(timeline=True) if self.timeline else spec

    @classmethod
    def of(cls: type[_S], value: object, *, path: str = "settings", keys: Mapping[str, str] | None = None) -> _S:
        """``value`` as these settings: an instance as it is, or a mapping of the fields (their
        JSON form, ``to_dict()``, included; an unknown key is refused with the valid ones), each
        error naming the field as ``keys`` does (field name -> key; default ``<path>.<field>``)."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(f"must be {cls.__name__} or a mapping of its fields (got {shown(value)})", path=path)
        names = [a.name for a in attrs.fields(cls) if a.init]
        errors = [unknown_key(key, names, path=path) for key in value if key not in names]
        if errors:
            raise ConfigError.combine(errors)
        return cls.read(value, keys={name: f"{path}.{name}" for name in names} if keys is None else keys)

    @classmethod
    def read(cls: type[_S], values: Mapping[str, object], *, keys: Mapping[str, str]) -> _S:
        """The settings from ``values`` (field name -> value) as a trainer's own config gives them,
        each error naming the key the trainer calls the field (``keys``: field name -> key, as
        ``{"rollouts": "profwin_rollouts"}``); ``rollouts`` and ``spec`` are required."""
        given: dict[str, Any] = dict(values)
        given["rollouts"] = Rollouts.of(given.get("rollouts"), path=keys.get("rollouts", "rollouts"))
        given["spec"] = spec_setting(given.get("spec"), path=keys.get("spec", "spec"))
        try:
            return cls(**given)
        except ConfigError as exc:
            raise _located(exc, keys) from None


def _located(exc: ConfigError, keys: Mapping[str, str]) -> ConfigError:
    """``exc`` with its leading field named as the trainer names it."""
    if exc.errors:
        return ConfigError.combine([_located(e, keys) for e in exc.errors])
    head = re.match(r"[A-Za-z_]\w*", exc.path)
    if head is None or head.group() not in keys:
        return exc
    return ConfigError(exc.reason, path=keys[head.group()] + exc.path[head.end() :])


_STATE = "_profwin_rollouts"  # on a trainer's object: [settings, profiler, next rollout id]


@checked
class TrainerIntegration(Generic[_S]):
    """One trainer integration: the verb pair, its failure policy and the pieces around a seam,
    written once for every trainer (the floor plan: docs/trainers.md).

    A trainer distribution's ``seam`` module subclasses it, makes the one instance its
    ``_plugin.PLUGIN`` names as target (``INTEGRATION``), and exports its verbs as they are::

        class TRLIntegration(TrainerIntegration[TRLProfiling]): ...

        INTEGRATION = TRLIntegration(PLUGIN)
        enable, disable, records = INTEGRATION.enable, INTEGRATION.disable, INTEGRATION.records

    What the subclass writes: :attr:`trainer` (as its users write it), :attr:`settings_type`,
    :meth:`seams` (raise :class:`~profwin.PluginError` naming a seam the installed trainer lacks),
    :meth:`install` (put profiling in place with :meth:`replace` and :meth:`when_imported`,
    returning what was put), and :meth:`default_settings` where the trainer's own config or
    environment carries them.

    The policy, the same in every trainer: :meth:`enable` never raises into the trainer. A
    trainer that is missing, outside ``PLUGIN.requires`` (:func:`profwin.discovery.unmet`, unless
    ``force``), lacking a seam, settings that cannot be read, anything that goes wrong while
    putting profiling in place: one ``RuntimeWarning`` saying why (:meth:`refuse`; a hook that
    meets the same refusal again stays quiet), ``enable`` returns ``[]``, and the trainer runs as
    without profwin. Around a rollout, :class:`RolloutProfiler`'s own rule holds: profiling never
    fails the rollout.
    """

    trainer: ClassVar[str] = ""
    """The trainer as its users write it (``"TRL"``, ``"OpenRLHF"``)."""
    settings_type: ClassVar[type[RolloutSettings] | None] = None
    """This trainer's settings type; ``None`` where the trainer's own config carries them (verl)."""
    unprofiled: ClassVar[str] = "unprofiled"
    """What a refusal leaves the trainer as, in its warning."""

    def __init__(self, plugin: PluginSpec) -> None:
        self.plugin = plugin
        self.distribution = f"profwin-{plugin.name}"
        import logging  # here: 2 ms of every command that lists the plugins

        self.logger = logging.getLogger(f"profwin_{plugin.name}")
        self.settings: _S | None = None
        """The settings :meth:`enable` was given (or found), ``None`` when disabled."""
        self.enabled: bool | None = None
        """Whether profiling is in place: ``None`` until :meth:`enable` is first called, ``False``
        after a refusal or :meth:`disable`."""
        self._lock = threading.RLock()
        self._undo: list[tuple[str, Callable[[], bool]]] = []  # what enable put in place (undo: was it there), oldest first
        self._profilers: list[RolloutProfiler] = []
        self._replaced: dict[tuple[int, str], tuple[Any, Any, object]] = {}  # (owner, name) -> (ours, original, key)
        self._warned: set[str] = set()

    # -- the verb pair -------------------------------------------------------------------------

    @checked
    def enable(self, settings: RolloutSettings | Mapping[str, Any] | None = None, *, force: bool = False) -> list[str]:
        """Put profiling in the trainer's seam; returns what was put in place (``module.name``
        each), ``[]`` when it already was.

        ``settings``: this trainer's settings type, or a mapping of its fields (read by its
        ``from_dict``); ``None``: what the trainer's own config or environment says, where it
        has one. ``force``: also on a trainer release outside the range its plugin declares.
        Never raises for the trainer, its environment or the settings' values: one
        ``RuntimeWarning`` says why, ``[]`` comes back, and the trainer runs as without profwin
        (only a call of the wrong shape or type raises, as for every profwin function)."""
        self._warned.clear()  # asked again: say it again
        try:
            chosen = self._chosen(settings)
            self.check(force=force)
            with self._lock:
                done = self._install(chosen)
                self.settings, self.enabled = chosen, True
                return done
        except Exception as exc:  # the trainer must run whatever happens here
            self.enabled = bool(self.enabled)  # what an earlier enable put in place stays as it was
            self.refuse(exc)
            return []

    @checked
    def disable(self) -> list[str]:
        """Take profiling out of the trainer's seam: what :meth:`enable` put in place is put back,
        newest first; returns what was restored. Never raises (a restore that fails is a warning)."""
        with self._lock:
            undo, self._undo = self._undo, []
            self.settings = None
            self.enabled = False
        restored = []
        for label, restore in reversed(undo):
            try:
                if restore():
                    restored.append(label)
            except Exception as exc:
                self.refuse(PluginError(f"{label} could not be put back ({type(exc).__name__}: {exc})"))
        return restored

    @checked
    def records(self) -> list[RolloutRecord]:
        """What profiling did around each profiled rollout in this process, oldest first (per
        profiler: one per trainer object that runs rollouts)."""
        with self._lock:
            profilers = list(self._profilers)
        return [record for profiler in profilers for record in profiler.records]

    # -- what a trainer's integration writes -----------------------------------------------------

    def seams(self) -> None:
        """Raise :class:`~profwin.PluginError` naming a seam the installed trainer lacks (called
        by :meth:`check`, after the version rule)."""

    def install(self, settings: _S | None) -> list[str]:
        """Put profiling in place for ``settings`` and return what was put (through
        :meth:`replace` and :meth:`when_imported`, so :meth:`disable` undoes it)."""
        raise NotImplementedError

    def default_settings(self) -> _S | None:
        """The settings when :meth:`enable` is given none: the trainer's own config or
        environment's, else a :class:`~profwin.PluginError` saying what to give."""
        if self.settings_type is None:
            return None
        raise PluginError(f"enable() needs this trainer's settings: {self.settings_type.__name__}(rollouts=..., spec=...)")

    # -- the policy --------------------------------------------------------------------------------

    def check(self, *, force: bool = False) -> None:
        """The trainer installed, within ``PLUGIN.requires`` (``force``: any release), with its
        seams; else a :class:`~profwin.PluginError` saying which."""
        from profwin.discovery import unmet

        for problem in unmet(self.plugin.requires):
            wanted = f"{self.distribution} supports {problem.requirement}"
            if problem.found is None and not _importable(problem.name):
                raise PluginError(f"{self.trainer} is not installed in this environment ({wanted})")
            if not force:
                found = "is installed without a version to check" if problem.found is None else f"is {problem.found}"
                raise PluginError(f"{wanted}, and {self.trainer} {found}: its seams may differ (enable(force=True) tries anyway)")
        self.seams()

    def imported(self, module: str) -> ModuleType:
        """The trainer's module ``module``, imported (for :meth:`seams`); a module that fails to
        import, whatever it raises, is a :class:`~profwin.PluginError` naming it."""
        try:
            return importlib.import_module(module)
        except Exception as exc:  # a broken install, an engine missing: the trainer's, not profwin's
            raise PluginError(f"{self.trainer}'s {module} cannot be imported: {type(exc).__name__}: {exc}") from None

    def refuse(self, why: BaseException | str) -> None:
        """Say once why the trainer runs unprofiled (a ``RuntimeWarning``; the same reason again
        stays quiet until the next :meth:`enable`)."""
        text = str(why) if isinstance(why, (str, ProfwinError)) else f"{type(why).__name__}: {why}"
        message = f"{self.distribution} left {self.trainer} {self.unprofiled}: {' '.join(text.split())}"
        with self._lock:
            if message in self._warned:
                return
            self._warned.add(message)
        warn(message, RuntimeWarning)

    def _install(self, settings: _S | None) -> list[str]:
        """:meth:`install`, all or nothing: what it put in place before failing is put back."""
        mark = len(self._undo)
        try:
            return self.install(settings)
        except BaseException:
            undo, self._undo[mark:] = self._undo[mark:], []
            for _, restore in reversed(undo):
                restore()
            raise

    def _chosen(self, settings: object) -> _S | None:
        if settings is None:
            return self.default_settings()
        kind = self.settings_type
        if kind is None:
            raise PluginError(f"{self.trainer}'s own config carries the settings: enable() takes none (got {shown(settings)})")
        return kind.of(settings, path="settings")  # type: ignore[return-value]  # settings_type is _S

    # -- the pieces around a seam ------------------------------------------------------------------

    def replace(self, owner: Any, name: str, make: Callable[[Any], Any], *, key: object = None) -> list[str]:
        """Put ``make(original)`` in place of ``owner.name`` (a module's or a class's attribute),
        once: while this integration's replacement made for the same ``key`` is there, it is left
        as it is (``key``: what the replacement was made for, such as settings it holds; another
        key replaces the original again). :meth:`disable` puts the original back. Returns
        ``["module.name"]`` when replaced now, else ``[]``."""
        slot = (id(owner), name)
        current = getattr(owner, name)
        with self._lock:
            mine = self._replaced.get(slot)
            ours = mine is not None and mine[0] is current
            if ours and mine is not None and mine[2] == key:
                return []
            original = mine[1] if ours and mine is not None else current
            replacement = make(original)
            first = not ours
            had_own = name in vars(owner)
            setattr(owner, name, replacement)
            self._replaced[slot] = (replacement, original, key)
        label = f"{owner.__name__}.{name}" if isinstance(owner, ModuleType) else f"{owner.__module__}.{owner.__qualname__}.{name}"

        def restore() -> bool:
            entry = self._replaced.pop(slot, None)
            if entry is None or getattr(owner, name, None) is not entry[0]:
                return False  # replaced since by someone else: theirs stays
            if had_own:
                setattr(owner, name, entry[1])
            else:
                delattr(owner, name)
            return True

        if first:
            with self._lock:
                self._undo.append((label, restore))
        return [label]

    def on_disable(self, label: str, restore: Callable[[], bool]) -> list[str]:
        """Have :meth:`disable` call ``restore`` (which says whether there was anything to undo),
        for what :meth:`install` put in place its own way; returns ``[label]``."""
        with self._lock:
            self._undo.append((label, restore))
        return [label]

    def original(self, owner: Any, name: str) -> Any:
        """What ``owner.name`` was before this integration's :meth:`replace` (its value when not replaced)."""
        current = getattr(owner, name)
        entry = self._replaced.get((id(owner), name))
        return entry[1] if entry is not None and entry[0] is current else current

    def when_imported(self, module: str, then: Callable[[ModuleType], list[str]]) -> list[str]:
        """``then(module)`` now when ``module`` is imported, else right after its first import in
        this process (a one-shot import hook: nothing is imported for it). A failure of ``then``
        is a refusal (:meth:`refuse`), never raised into the import. :meth:`disable` removes a
        hook that has not run. Returns what ``then`` put in place now, ``["<module> (when
        imported)"]`` when the hook is set now, or ``[]`` when it already was."""
        loaded = sys.modules.get(module)
        if loaded is not None:
            return then(loaded)
        if any(isinstance(f, _AfterImport) and f.owner is self and f.name == module for f in sys.meta_path):
            return []
        hook = _AfterImport(self, module, then)
        sys.meta_path.insert(0, hook)
        label = f"{module} (when imported)"
        with self._lock:
            self._undo.append((label, hook.remove))
        return [label]

    def next_rollout(self, owner: Any, settings: _S, make: Callable[[_S], RolloutProfiler]) -> tuple[RolloutProfiler, int]:
        """``owner``'s profiler and the id of the rollout about to run: ``owner``'s calls are its
        rollouts, counted from 0 (each trainer object its own count). The profiler is made by
        ``make(settings)`` at the object's first rollout, and again when the settings changed."""
        with self._lock:
            state = owner.__dict__.get(_STATE)
            if state is None or state[0] is not settings:
                profiler = make(settings)
                self._profilers.append(profiler)
                state = owner.__dict__[_STATE] = [settings, profiler, state[2] if state else 0]
            rollout_id = state[2]
            state[2] += 1
            return state[1], rollout_id

    def profiler(self, *args: Any, **kwargs: Any) -> RolloutProfiler:
        """A :class:`RolloutProfiler` whose records :meth:`records` returns."""
        profiler = RolloutProfiler(*args, **kwargs)
        with self._lock:
            self._profilers.append(profiler)
        return profiler

    def around(self, profiler: RolloutProfiler, rollout_id: int, call: Callable[[], _T], *, kind: str = "rollout") -> _T:
        """``call()`` inside ``profiler.rollout(rollout_id)``, its record logged (info when ok,
        warning else, each file named): what ``call`` returns or raises comes back unchanged."""
        around = profiler.rollout(rollout_id, kind=kind)
        try:
            with around:
                return call()
        finally:
            record = getattr(around, "record", None)
            if record is not None:
                self._log(record)

    def _log(self, record: RolloutRecord) -> None:
        files = ", ".join(a.path.name for a in record.artifacts)
        if record.ok:
            self.logger.info("profwin: %s%s", record.message, f" ({files})" if files else "")
        else:
            self.logger.warning("profwin: %s", record.message)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module.replace("-", "_")) is not None
    except (ImportError, ValueError):
        return False


class _AfterImport:
    """Runs ``then(module)`` right after the module ``name`` is executed, once."""

    def __init__(self, owner: TrainerIntegration[Any], name: str, then: Callable[[ModuleType], list[str]]) -> None:
        self.owner = owner
        self.name = name
        self.then = then

    def remove(self) -> bool:
        """Take the hook off the import system; whether it was still waiting."""
        if self not in sys.meta_path:
            return False
        sys.meta_path.remove(self)
        return True

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        self.remove()  # the real finders find it; this one only watches
        spec = importlib.util.find_spec(fullname)
        loader = None if spec is None else spec.loader
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module, then, owner = loader.exec_module, self.then, self.owner

        def exec_then(module: ModuleType) -> None:
            exec_module(module)
            try:
                then(module)
            except Exception as exc:  # the trainer's import must succeed whatever profwin does
                owner.refuse(exc)

        loader.exec_module = exec_then  # type: ignore[method-assign]
        return spec
