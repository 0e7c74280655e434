"""``profwin_vllm.session``: profile one window of an ``LLM``, an ``AsyncLLM`` or running servers.

::

    with profwin_vllm.session(llm, spec) as s:          # or: async with ... (AsyncLLM, URLs)
        llm.generate(prompts, params)
    s.artifacts                                           # this session's traces, with their steps

On entry the session starts vLLM's profiler with the window (per session on vLLM ≥ 0.32; on
0.13–0.31 it checks that the engine was launched with the window's config). On exit it always
calls ``stop_profile``: vLLM's own auto-stop at the window's end writes the trace but leaves the
frontend's "session active" flag set, and the next ``start_profile`` would fail without it.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from profwin.errors import ConfigError, PluginError, WindowWarning
from profwin.plugin_api import Artifact, RemoteResult
from profwin.spec import ProfileSpec
from profwin.window import Window
from profwin_vllm.remote import OnActive, fan_out, server_specs, start_server, stop_server
from profwin_vllm.settings import VllmSettings, render, settings_for
from profwin_vllm.traces import session_artifacts, trace_files
from profwin_vllm.versions import Mechanism, resolve_version

__all__ = ["SessionError", "VllmSession", "session"]


class SessionError(RuntimeError):
    """Starting or stopping failed on at least one engine; ``results`` has every engine's outcome."""

    def __init__(self, message: str, results: Sequence[RemoteResult] = ()) -> None:
        super().__init__(message)
        self.results = list(results)


def session(
    target: Any,
    spec: ProfileSpec | Window | str,
    *,
    version: str | None = None,
    api_key: str | None = None,
    timeout: float = 30.0,
    on_active: OnActive = "error",
) -> VllmSession:
    """A context manager (``with`` or ``async with``) that profiles ``spec.window`` on ``target``.

    Args:
        target: a ``vllm.LLM``, a ``vllm.v1.engine.async_llm.AsyncLLM`` (``async with`` only), a
            server URL, or a list of URLs (started and stopped concurrently).
        spec: a :class:`profwin.ProfileSpec`, or just the window (``"20:80"``).
        version: the vLLM version, for servers that cannot be asked (``GET /version``).
        api_key: bearer token for servers started with ``--api-key``.
        timeout: seconds per HTTP request.
        on_active: a server or engine already profiling is an ``"error"``, or is stopped and
            started again (``"restart"``).
    """
    if isinstance(spec, str):
        spec = ProfileSpec(window=Window.parse(spec))
    elif isinstance(spec, Window):
        spec = ProfileSpec(window=spec)
    elif not isinstance(spec, ProfileSpec):
        raise ConfigError(f"spec must be a ProfileSpec, a Window or text like '20:80' (got {spec!r})")
    if on_active not in ("error", "restart"):
        raise ConfigError(f"must be 'error' or 'restart' (got {on_active!r})", path="on_active")
    return VllmSession(target, spec, version=version, api_key=api_key, timeout=timeout, on_active=on_active)


class VllmSession:
    """One profiling session on one in-process engine or on several servers (see :func:`session`).

    Attributes:
        spec: the spec the session was opened with.
        artifacts: the files this session wrote (filled on exit), each with the steps it covers.
        results: one :class:`profwin.RemoteResult` per engine for start, then replaced by stop's.
    """

    def __init__(
        self, target: Any, spec: ProfileSpec, *, version: str | None, api_key: str | None, timeout: float, on_active: OnActive
    ) -> None:
        self.spec = spec
        self.artifacts: list[Artifact] = []
        self.results: list[RemoteResult] = []
        self._target = target
        self._version = version
        self._api_key = api_key
        self._timeout = timeout
        self._on_active = on_active
        self._urls = _urls(target)
        self._started: list[int] = []
        self._before: dict[int, set[Path]] = {}
        self._engine: _Engine | None = None

    # -- sync -------------------------------------------------------------------------------

    def __enter__(self) -> VllmSession:
        if self._urls is None and _is_async(self._target):
            raise ConfigError("an AsyncLLM needs `async with profwin_vllm.session(...)`", path="target")
        self._start_blocking()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop_blocking(failed=exc_type is not None)

    # -- async ------------------------------------------------------------------------------

    async def __aenter__(self) -> VllmSession:
        if self._urls is None and _is_async(self._target):
            engine = self._prepare_engine()
            await self._call_async(engine)
            return self
        await asyncio.to_thread(self._start_blocking)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._urls is None and _is_async(self._target):
            assert self._engine is not None
            try:
                await self._target.stop_profile()
            except Exception as stop_exc:
                self._stop_failed(stop_exc, failed=exc_type is not None)
                return
            self._collect_engine()
            return
        await asyncio.to_thread(self._stop_blocking, failed=exc_type is not None)

    # -- servers ----------------------------------------------------------------------------

    def _start_blocking(self) -> None:
        if self._urls is None:
            engine = self._prepare_engine()
            self._call_sync(engine)
            return
        specs = server_specs(self.spec, self._urls)
        indices = list(range(len(self._urls)))
        for i in indices:
            self._before[i] = trace_files(specs[i].output_dir)
        results = fan_out(
            lambda i: start_server(
                self._urls[i],  # type: ignore[index]
                specs[i],
                version=self._version,
                api_key=self._api_key,
                timeout=self._timeout,
                on_active=self._on_active,
            ),
            indices,
        )
        self.results = results
        self._started = [i for i in indices if results[i].ok]
        if len(self._started) < len(indices):
            self._stop_servers()  # leave no server profiling when the session as a whole failed
            failed = "\n".join(f"  {r.target}: {r.message}" for r in results if not r.ok)
            raise SessionError(f"profwin-vllm: could not start profiling on every server:\n{failed}", results)
        for result in results:
            if result.details.get("mechanism") != Mechanism.PER_SESSION.value:
                warnings.warn(f"profwin: {result.target}: {result.message}", stacklevel=3)

    def _stop_servers(self) -> list[RemoteResult]:
        urls = self._urls
        assert urls is not None
        specs = server_specs(self.spec, urls)
        return fan_out(
            lambda i: stop_server(
                urls[i],
                specs[i],
                version=self._version,
                api_key=self._api_key,
                timeout=self._timeout,
                before=self._before.get(i),
            ),
            self._started,
        )

    def _stop_blocking(self, *, failed: bool) -> None:
        if self._urls is None:
            assert self._engine is not None
            try:
                self._target.stop_profile()
            except Exception as exc:
                self._stop_failed(exc, failed=failed)
                return
            self._collect_engine()
            return
        results = self._stop_servers()
        self.results = results
        self.artifacts = [a for r in results for a in r.artifacts]
        bad = [r for r in results if not r.ok]
        if bad and not failed:
            lines = "\n".join(f"  {r.target}: {r.message}" for r in bad)
            raise SessionError(f"profwin-vllm: stopping failed on some servers:\n{lines}", results)
        self._warn_short(sum(a.kind == "trace" for a in self.artifacts))

    # -- in-process engines -----------------------------------------------------------------

    def _prepare_engine(self) -> _Engine:
        engine = _Engine.inspect(self._target, self.spec, self._version)
        self._engine = engine
        self._before[0] = trace_files(engine.trace_dir)
        return engine

    def _call_sync(self, engine: _Engine) -> None:
        kwargs = dict(engine.settings.start_kwargs)
        try:
            self._target.start_profile(**kwargs)
        except Exception as exc:
            if not _already_active(exc) or self._on_active != "restart":
                raise _start_error(exc) from exc
            self._target.stop_profile()
            self._target.start_profile(**kwargs)

    async def _call_async(self, engine: _Engine) -> None:
        kwargs = dict(engine.settings.start_kwargs)
        try:
            await self._target.start_profile(**kwargs)
        except Exception as exc:
            if not _already_active(exc) or self._on_active != "restart":
                raise _start_error(exc) from exc
            await self._target.stop_profile()
            await self._target.start_profile(**kwargs)

    def _collect_engine(self) -> None:
        engine = self._engine
        assert engine is not None
        paths = trace_files(engine.trace_dir) - self._before[0]
        prefix = self.spec.prefix if engine.settings.version.takes_prefix else None
        self.artifacts = session_artifacts(paths, window=self.spec.window, prefix=prefix, ranks=self.spec.ranks, producer="vllm")
        traces = sum(a.kind == "trace" for a in self.artifacts)
        self.results = [
            RemoteResult(
                target=type(self._target).__name__,
                ok=True,
                message=f"stopped; {traces} trace file(s) in {engine.trace_dir}",
                artifacts=tuple(self.artifacts),
                details={"version": str(engine.settings.version), "window": str(self.spec.window)},
            )
        ]
        self._warn_short(traces)

    def _stop_failed(self, exc: Exception, *, failed: bool) -> None:
        if failed:  # never mask the user's exception with ours
            warnings.warn(f"profwin: stop_profile failed after an error in the session: {exc}", stacklevel=3)
            return
        raise SessionError(f"profwin-vllm: stop_profile failed: {type(exc).__name__}: {exc}") from exc

    def _warn_short(self, traces: int) -> None:
        window = self.spec.window
        if traces == 0:
            warnings.warn(
                f"profwin: no trace was written for window {window}: the engine ran fewer than "
                f"{window.start + 1} step(s) in this session, or it writes elsewhere",
                WindowWarning,
                stacklevel=4,
            )
            return
        for artifact in self.artifacts:
            steps = artifact.steps
            if (
                artifact.kind == "trace"
                and steps is not None
                and window.end is not None
                and steps.end is not None
                and steps.end < window.end
            ):
                warnings.warn(
                    f"profwin: the session ended inside window {window}; {artifact.path.name} holds steps {steps}",
                    WindowWarning,
                    stacklevel=4,
                )


class _Engine:
    """An in-process ``LLM``/``AsyncLLM``: its version, its profiler config and what to send it."""

    def __init__(self, settings: VllmSettings, trace_dir: Path) -> None:
        self.settings = settings
        self.trace_dir = trace_dir

    @classmethod
    def inspect(cls, target: Any, spec: ProfileSpec, version: str | None) -> _Engine:
        if version is None and "vllm" in sys.modules:
            version = getattr(sys.modules["vllm"], "__version__", None)
        planned, _ = resolve_version(version)
        vllm_config = getattr(target, "vllm_config", None)
        if vllm_config is None and hasattr(target, "llm_engine"):
            vllm_config = getattr(target.llm_engine, "vllm_config", None)
        if vllm_config is None:
            raise ConfigError(f"expected a vllm.LLM, an AsyncLLM or server URL(s) (got {type(target).__name__})", path="target")
        spec = _with_platform(spec)
        settings = settings_for(spec, planned)
        config = getattr(vllm_config, "profiler_config", None)
        if config is None or getattr(config, "profiler", None) is None:
            raise ConfigError(
                f"this engine was built without a profiler; build it with {render(settings, 'llm').splitlines()[0]}",
                path="target",
            )
        if config.profiler != "torch":
            raise PluginError(f"profwin-vllm reads torch traces; this engine runs the {config.profiler!r} profiler")
        if planned.mechanism is not Mechanism.PER_SESSION:
            launched = (config.delay_iterations, config.max_iterations)
            if launched != (settings.delay_iterations, settings.max_iterations):
                raise ConfigError(
                    f"vLLM {planned} fixes the window at launch, and this engine was built with delay_iterations="
                    f"{launched[0]}, max_iterations={launched[1]}; window {spec.window} needs "
                    f"delay_iterations={settings.delay_iterations}, max_iterations={settings.max_iterations}: "
                    f"rebuild it with {render(settings, 'llm').splitlines()[0]}",
                    path="window",
                )
        directory = str(config.torch_profiler_dir)
        if "://" in directory:
            raise PluginError(f"this engine writes traces to {directory}, which profwin cannot list; use a local directory")
        return cls(settings, Path(directory))


def _with_platform(spec: ProfileSpec) -> ProfileSpec:
    """The spec with ``options.vllm.platform`` set from the loaded vLLM, so activities are checked now."""
    options = dict(spec.plugin_options("vllm"))
    if "platform" in options:
        return spec
    platforms = sys.modules.get("vllm.platforms")
    device = getattr(getattr(platforms, "current_platform", None), "device_type", None)
    if device not in ("cpu", "cuda", "xpu"):
        return spec
    return spec.replace(options={**spec.options, "vllm": {**options, "platform": device}})


def _urls(target: Any) -> list[str] | None:
    if isinstance(target, str):
        return [target]
    if isinstance(target, (list, tuple)) and target and all(isinstance(t, str) for t in target):
        return list(target)
    if isinstance(target, (list, tuple)):
        raise ConfigError(f"a list of targets must hold server URLs (got {target!r})", path="target")
    return None


def _is_async(target: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(target, "start_profile", None))


def _already_active(exc: BaseException) -> bool:
    return type(exc).__name__ == "ProfilerAlreadyActiveError"


def _start_error(exc: BaseException) -> Exception:
    if _already_active(exc):
        return SessionError(
            "profwin-vllm: a profiling session is already active on this engine; call stop_profile() "
            "first, or pass on_active='restart'"
        )
    return SessionError(f"profwin-vllm: start_profile failed: {type(exc).__name__}: {exc}")
