"""The engine API: what a backend plugin (vLLM, SGLang, ...) provides, as data.

How it works, and why: docs/internals.md, ``profwin.engine``.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

from attrs import evolve, field, frozen

from profwin.arguments import checked
from profwin.errors import ConfigError, ProfwinError
from profwin.json_form import JsonForm
from profwin.protocols import Artifact
from profwin.spec import ProfileSpec
from profwin.window import Window

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "Backend",
    "EngineBusy",
    "EnginePlan",
    "EngineTarget",
    "TargetContext",
    "TargetError",
    "TargetSkipped",
    "VersionSource",
]

T = TypeVar("T")
VersionSource = Literal["given", "installed", "server", "assumed"]


def _frozen_map(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(value or {}))


def _optional_map(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else MappingProxyType(dict(value))


@checked
@frozen(kw_only=True)
class EnginePlan(JsonForm):
    """What one engine version is sent to record exactly a window, as data (JSON-ready).

    Attributes:
        engine: the backend's name (``vllm``, ``sglang``).
        version: the engine version planned for (``None``: unknown, planned for the newest known).
        version_source: ``given`` (by the caller), ``installed`` (found here), ``server`` (asked
            from a live server) or ``assumed``.
        mechanism: how the engine takes the window (backend-specific: vLLM ``per-session``,
            ``launch-config``, ``env``, ``none``; SGLang ``relative``, ``immediate``, ``trim``,
            ``by-stage``).
        window: the steps asked for, counted from the session start.
        records: the session steps the engine will record (wider than ``window`` when the trace is
            trimmed afterwards; ``None``: from the start to the stop).
        output_dir: where the engine writes its files.
        launch: launch arguments as data (keyword -> value), e.g. vLLM's ``profiler_config``;
            ``--kebab-case`` flags and Python keywords are rendered from it.
        env: environment variables the engine process needs at launch.
        request: the per-session start request (HTTP body and ``start_profile`` keywords), or
            ``None`` when the engine takes nothing per session.
        per_session: each session carries its own window (else the launch arguments fix it).
        server_requirement: what must be installed where the engine runs, or ``None``.
        fallback: what happens when ``server_requirement`` is missing, or ``None``.
        alternative: a request that records more exactly on an engine that has something
            installed, for a plan made without asking the engine (``profwin args``): ``{"needs":
            what, "request": body, "records": steps}``; ``request`` is then what a stock engine
            honours. ``None`` when there is none.
        notes: what the user must know about this plan.
        details: backend-specific facts a target needs again at stop time (JSON-ready).
    """

    engine: str
    version: str | None
    version_source: VersionSource
    mechanism: str
    window: Window
    records: Window | None
    output_dir: Path
    launch: Mapping[str, Any] = field(factory=dict, converter=_frozen_map, hash=False)
    env: Mapping[str, str] = field(factory=dict, converter=_frozen_map, hash=False)
    request: Mapping[str, Any] | None = field(default=None, converter=_optional_map, hash=False)
    per_session: bool = True
    server_requirement: str | None = None
    fallback: str | None = None
    alternative: Mapping[str, Any] | None = field(default=None, converter=_optional_map, hash=False)
    notes: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(factory=dict, converter=_frozen_map, hash=False)

    def replace(self, **changes: Any) -> EnginePlan:
        """A copy with some fields changed."""
        return evolve(self, **changes)


class TargetError(ProfwinError, RuntimeError):
    """Starting, stopping or asking one engine failed; the message says what to do about it.

    ``details`` (JSON-ready) go into that target's :class:`~profwin.RemoteResult`.
    """

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


class EngineBusy(TargetError):
    """The engine already has a profiling session (``on_active="restart"`` stops it and retries)."""


class TargetSkipped(TargetError):
    """This engine is left out of the session, untouched (nothing was sent to it), for the reason
    given; the session goes on with the others. For what is true of one engine only (an SGLang
    server that runs a profiler profwin must not drive): a fan-out or a router never loses every
    engine's window for one of them."""


@checked
class TargetContext:
    """How a target waits for its engine: a timeout for every call, and the caller's event loop
    when the session runs under ``async with`` (an ``AsyncLLM``'s coroutines must run there).

    Target methods run in worker threads; :meth:`call` runs an engine call on the caller's loop.
    """

    def __init__(self, *, timeout: float, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.timeout = timeout
        self.loop = loop

    def call(self, fn: Callable[[], Awaitable[T] | T], what: str) -> T:
        """``fn()`` and, if it returns an awaitable, its result. Under ``async with`` the call itself
        runs on the caller's loop thread, within the timeout: an async engine's methods may start
        thread-bound work before their first ``await`` (vLLM's ``AsyncLLM.start_profile`` starts the
        frontend's torch profiler, which must be stopped on the thread that started it)."""
        if self.loop is None:
            value = fn()
            if not inspect.isawaitable(value):
                return value
            close = getattr(value, "close", None)
            if close is not None:
                close()  # never leave a coroutine un-awaited behind a clear error
            raise ConfigError(f"{what} is a coroutine: use `async with` for this engine", path="target")
        import asyncio  # the caller's loop runs, so these are loaded: not at module level (12 ms to list plugins)
        import concurrent.futures

        future = asyncio.run_coroutine_threadsafe(_called(fn), self.loop)
        try:
            return future.result(self.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TargetError(f"{what} did not return within {self.timeout:g} s") from None

    def bounded(self, call: Callable[[], T], what: str) -> T:
        """``call()`` in a helper thread, given up after the timeout (the call stays behind in it):
        engines' blocking calls have hung forever (SGLang #22083)."""
        result: list[T] = []
        error: list[BaseException] = []

        def run() -> None:
            try:
                result.append(call())
            except BaseException as exc:
                error.append(exc)

        thread = threading.Thread(target=run, name=f"profwin-{what}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            raise TargetError(f"{what} did not return within {self.timeout:g} s")
        if error:
            raise error[0]
        return result[0]


async def _called(fn: Callable[[], Awaitable[T] | T]) -> T:
    value = fn()
    return await value if inspect.isawaitable(value) else value


@runtime_checkable
class EngineTarget(Protocol):
    """One live engine: an in-process engine object or one server. Methods run in worker threads
    and raise :class:`TargetError` (or :class:`EngineBusy`) with a message for the user.

    A session finds the files an engine wrote by listing ``plan.output_dir`` in its own process
    before the start and after the stop (servers on a shared disk, engine objects in the caller).
    A target whose engine writes on another machine (an engine inside a Ray actor on another
    node) may define ``listing(plan: EnginePlan) -> Mapping[str, tuple[int, int]]``: the regular
    files of ``plan.output_dir`` *where the engine runs*, ``name -> (mtime_ns, bytes)`` (hidden
    files left out). The session then lists through it, never prepares that folder in its own
    process (the target's :meth:`plan` does, where the engine runs), and hands :meth:`collect`
    paths on the engine's machine: bringing the files to the caller is the target's.

    A target whose engine runs profwin code inside it (an engine-side plugin) may define
    ``engine_errors(plan: EnginePlan, ctx: TargetContext) -> list[str]``: what went wrong in
    there since ``plan`` was made, in the engine's own words. The session calls it after the stop
    and puts it in the result (``details["engine_error"]``, and the reason a window recorded
    nothing), so an error inside the engine reaches the user as itself.
    """

    name: str
    """The URL, or ``engine:<Type>@<id>`` for an object: what results are keyed by."""

    def plan(self, spec: ProfileSpec, version: str | None, ctx: TargetContext) -> EnginePlan:
        """Ask the engine what it is (version, device, capabilities) and plan ``spec`` for it."""

    def start(self, plan: EnginePlan, ctx: TargetContext) -> None:
        """Send the plan's per-session request."""

    def stop(self, plan: EnginePlan, ctx: TargetContext) -> bool:
        """Stop the session: ``True`` if the profiler was still recording (and wrote its files
        now), ``False`` if nothing was recording (auto-stopped already, or never started)."""

    def collect(self, plan: EnginePlan, files: Callable[[], list[Path]], *, stopped: bool) -> tuple[list[Artifact], list[str]]:
        """This session's artifacts among ``files()`` (the files new or changed in
        ``plan.output_dir`` since the start; call it again to wait for a slow disk), each with the
        steps it holds, and notes for the user."""


@runtime_checkable
class Backend(Protocol):
    """An engine that owns its profiler and takes the window as arguments (vLLM, SGLang).

    A backend may also define ``check_state(plan: EnginePlan, spec: ProfileSpec) -> None``:
    ``profwin stop`` reads a plan back from a state file another process wrote (untrusted input),
    checks its types and output directory, and then hands it to the backend, which must raise a
    :class:`~profwin.ConfigError` (path relative to the plan: ``details.prefix``) for anything its
    targets would act on that its ``plan`` could not have produced for ``spec`` (the stop's own
    spec): a file prefix, an id, a count out of range, an unknown key in ``request`` or
    ``details``. The state is then refused, and nothing is collected, trimmed or deleted.
    """

    name: str
    default_form: str
    """What ``profwin args ENGINE`` prints without ``--for`` (see :data:`profwin.render.FORMS`)."""

    def plan(self, spec: ProfileSpec, *, version: str | None = None) -> EnginePlan:
        """The plan for ``spec`` on ``version`` (``None``: the installed engine, else the newest known)."""

    def target(self, target: Any, *, api_key: str | None, timeout: float) -> EngineTarget:
        """One :class:`EngineTarget` for a server URL or an engine object; a ConfigError otherwise."""
