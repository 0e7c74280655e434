"""The live SGLang servers a session drives: an HTTP server by URL, or an in-process ``Engine``.

Both answer the same four questions — what are you (``info``), start, stop, and forget an armed
window (``disarm``) — so the session logic does not care which it talks to. Every call has a
timeout: SGLang's ``/start_profile`` can hang forever (#22083).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, TypeVar

from attrs import frozen

from profwin_sglang.http import ServerError, ServerTimeout, call, normalize_url
from profwin_sglang.server_plugin import PROTOCOL, RELATIVE_BASE, STATE_KEY
from profwin_sglang.versions import installed_version

__all__ = ["DISARM_STEP", "EngineTarget", "HttpTarget", "ServerInfo", "StopOutcome", "Target", "is_engine"]

StopOutcome = Literal["stopped", "not-running"]
"""``stopped``: the profiler was running and has written its files now; ``not-running``: SGLang said
"Profiling is not in progress" (it auto-stopped already, or the window was never reached)."""

DISARM_STEP = 1 << 62
"""An absolute ``start_step`` no server reaches, outside the server plugin's relative range."""

_NOT_RUNNING = "not in progress"
T = TypeVar("T")


@frozen(kw_only=True)
class ServerInfo:
    """What profwin needs to know about a server before starting.

    Attributes:
        version: SGLang's version string, if the server said.
        device: its ``--device`` (``cuda``, ``cpu``, ``npu``...), if known.
        plugin: the profwin-sglang server plugin answered with the protocol this client speaks.
        forward_ct: rank 0's batch counter (only with the plugin).
    """

    version: str | None
    device: str | None
    plugin: bool
    forward_ct: int | None = None

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> ServerInfo:
        states = data.get("internal_states") or []
        state = states[0] if isinstance(states, list) and states and isinstance(states[0], Mapping) else {}
        ours = state.get(STATE_KEY) if isinstance(state, Mapping) else None
        plugin = isinstance(ours, Mapping) and ours.get("protocol") == PROTOCOL and ours.get("relative_base") == RELATIVE_BASE
        device = data.get("device")
        version = data.get("version")
        return cls(
            version=version if isinstance(version, str) else None,
            device=device if isinstance(device, str) else None,
            plugin=bool(plugin),
            forward_ct=int(ours["forward_ct"]) if plugin and isinstance(ours, Mapping) else None,
        )


class Target(Protocol):
    name: str

    def info(self) -> ServerInfo: ...
    def start(self, body: dict[str, Any]) -> None: ...
    def stop(self) -> StopOutcome: ...
    async def ainfo(self) -> ServerInfo: ...
    async def astart(self, body: dict[str, Any]) -> None: ...
    async def astop(self) -> StopOutcome: ...


def disarm_body(output_dir: str) -> dict[str, Any]:
    """Re-arm the profiler at a step no server reaches: SGLang's only way to forget an armed window
    (``/stop_profile`` refuses while nothing is recording and leaves the arming in place)."""
    return {
        "output_dir": output_dir,
        "start_step": DISARM_STEP,
        "num_steps": 1,
        "activities": ["CPU"],
        "with_stack": False,
        "record_shapes": False,
        "profile_by_stage": False,
        "profile_prefix": "profwin-disarmed",
    }


class HttpTarget:
    """An SGLang HTTP server (``http://host:port``)."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.name = normalize_url(url)
        self.api_key = api_key
        self.timeout = timeout

    def info(self) -> ServerInfo:
        try:
            reply = call(self.name, "/server_info", method="GET", api_key=self.api_key, timeout=self.timeout)
        except ServerError as exc:
            if exc.status != 404:
                raise
            # SGLang before /server_info existed.
            reply = call(self.name, "/get_server_info", method="GET", api_key=self.api_key, timeout=self.timeout)
        return ServerInfo.parse(reply.json())

    def start(self, body: dict[str, Any]) -> None:
        try:
            call(self.name, "/start_profile", body=body, api_key=self.api_key, timeout=self.timeout)
        except ServerTimeout as exc:
            raise ServerTimeout(
                f"{exc} — SGLang's /start_profile can hang (e.g. with DP attention, SGLang #22083); the server "
                f"may still start profiling, so call stop on it",
                url=self.name,
            ) from None

    def stop(self) -> StopOutcome:
        try:
            call(self.name, "/stop_profile", api_key=self.api_key, timeout=self.timeout)
        except ServerError as exc:
            if _is_not_running(exc):
                return "not-running"
            raise
        return "stopped"

    async def ainfo(self) -> ServerInfo:
        return await asyncio.to_thread(self.info)

    async def astart(self, body: dict[str, Any]) -> None:
        await asyncio.to_thread(self.start, body)

    async def astop(self) -> StopOutcome:
        return await asyncio.to_thread(self.stop)


def _is_not_running(exc: ServerError) -> bool:
    """Whether ``/stop_profile`` failed because nothing was recording.

    SGLang 0.5.23 turns the scheduler's "Profiling is not in progress" into a bare HTTP 500
    "Internal Server Error" (older servers put the message in the body); the stop path has no
    other failure that answers, so a 500 without another message means exactly that.
    """
    body = " ".join(exc.body.split()).lower()
    return exc.status == 500 and (_NOT_RUNNING in body or body in ("", "internal server error"))


def is_engine(target: object) -> bool:
    """Whether ``target`` looks like an ``sglang.Engine`` (duck-typed: sglang is not imported)."""
    return hasattr(target, "tokenizer_manager") and callable(getattr(target, "start_profile", None))


class EngineTarget:
    """An in-process ``sglang.Engine`` (its schedulers run in child processes on this machine)."""

    def __init__(self, engine: Any, *, timeout: float = 30.0, req_type: bool = True) -> None:
        self.engine = engine
        self.name = f"engine:{type(engine).__name__}@{id(engine):x}"
        self.timeout = timeout
        self.req_type = req_type

    # The Engine's sync methods run its own event loop to completion without a limit; a worker
    # thread lets profwin give up after the timeout (the stuck call stays behind in that thread).
    def _bounded(self, what: str, fn: Callable[[], T]) -> T:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="profwin-sglang")
        try:
            return pool.submit(fn).result(timeout=self.timeout)
        except concurrent.futures.TimeoutError:
            raise ServerTimeout(f"Engine.{what} did not return within {self.timeout:g} s", url=self.name) from None
        finally:
            pool.shutdown(wait=False)

    async def _abounded(self, what: str, awaitable: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(awaitable, timeout=self.timeout)
        except asyncio.TimeoutError:
            raise ServerTimeout(f"Engine.{what} did not return within {self.timeout:g} s", url=self.name) from None

    def _info_from(self, data: Mapping[str, Any]) -> ServerInfo:
        info = ServerInfo.parse(data)
        if info.version is None or info.device is None:
            args = getattr(self.engine.tokenizer_manager, "server_args", None)
            info = ServerInfo(
                version=info.version or installed_version(),
                device=info.device or getattr(args, "device", None),
                plugin=info.plugin,
                forward_ct=info.forward_ct,
            )
        return info

    def info(self) -> ServerInfo:
        return self._info_from(self._bounded("get_server_info", self.engine.get_server_info))

    def start(self, body: dict[str, Any]) -> None:
        self._bounded("start_profile", lambda: self.engine.start_profile(**body))

    def stop(self) -> StopOutcome:
        try:
            self._bounded("stop_profile", self.engine.stop_profile)
        except RuntimeError as exc:
            if _NOT_RUNNING in str(exc).lower() and not isinstance(exc, ServerError):
                return "not-running"
            raise
        return "stopped"

    async def ainfo(self) -> ServerInfo:
        states = await self._abounded("get_internal_state", self.engine.tokenizer_manager.get_internal_state())
        return self._info_from({"internal_states": states})

    async def astart(self, body: dict[str, Any]) -> None:
        manager = self.engine.tokenizer_manager
        if self.req_type:
            from sglang.srt.managers.io_struct import ProfileReq  # the engine is here, so sglang is too

            await self._abounded("start_profile", manager.start_profile(ProfileReq(**body)))
        else:  # before 0.5.23 the tokenizer manager took the fields as keywords
            await self._abounded("start_profile", manager.start_profile(**body))

    async def astop(self) -> StopOutcome:
        try:
            await self._abounded("stop_profile", self.engine.tokenizer_manager.stop_profile())
        except RuntimeError as exc:
            if _NOT_RUNNING in str(exc).lower() and not isinstance(exc, ServerError):
                return "not-running"
            raise
        return "stopped"
