"""The live SGLang engines a session drives: an HTTP server by URL, or an in-process ``Engine``.

Both answer what they are (:class:`ServerInfo`), start, and stop; the session logic is core's
(:func:`profwin.remote_session`), the SGLang rules are here: the plan is chosen once the server
has said whether the profwin-sglang server plugin runs in it; SGLang answers "Profiling is not in
progress" when it auto-stopped already or the window was never reached, and a window that was
never reached stays armed until profwin re-arms it out of reach. Every call has a timeout:
SGLang's ``/start_profile`` can hang forever (#22083).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeGuard

from attrs import evolve, frozen

from profwin.plugin import Artifact, ConfigError, ProfileSpec, checked, shown
from profwin.plugin.engines import (
    EngineBusy,
    EnginePlan,
    LocalProcess,
    TargetContext,
    TargetError,
    TargetSkipped,
    serving_processes,
)
from profwin.plugin.remote import Reply, ServerClient
from profwin_sglang.options import options_of
from profwin_sglang.plan import plan_for
from profwin_sglang.server_plugin import PROTOCOL, RELATIVE_BASE, STATE_KEY, TIMELINE, TOKEN_WINDOWS, V2_ENV, unavailable_here
from profwin_sglang.structs import build_profile_req
from profwin_sglang.traces import collect
from profwin_sglang.versions import features, plugin_inactive_reason, sglang_version
from profwin_sglang.window import v2_refusal

__all__ = ["DISARM_STEP", "ServerInfo", "SglangEngine", "SglangServer", "disarm_body", "is_engine"]

DISARM_STEP = 1 << 62
"""An absolute ``start_step`` no server reaches, outside the server plugin's relative range."""

_NOT_RUNNING = "not in progress"
_BUSY = "already in progress"


_TRUE = ("1", "true", "yes", "y", "on")


def profiler_from_env(value: object) -> str | None:
    """``v2`` or ``v1`` for a value of ``SGLANG_PROFILE_V2`` as SGLang reads it (``None``: unset)."""
    if value is None:
        return None
    return "v2" if str(value).strip().lower() in _TRUE else "v1"


@frozen(kw_only=True)
class ServerInfo:
    """What profwin needs to know about a server before starting, from every scheduler's entry
    of ``internal_states``: a capability counts only when every scheduler reports it.

    Attributes:
        version: SGLang's version string, if the server said.
        device: its ``--device`` (``cuda``, ``cpu``, ``npu``...), if known.
        plugin: the profwin-sglang server plugin answered with the protocol this client speaks,
            on every scheduler the server lists (one entry each in ``internal_states``): a relative
            start is honoured only if each one rewrites it.
        token_windows: the plugin decides token windows, on every scheduler.
        timeline: the plugin records session timelines, on every scheduler.
        profiler: ``v2`` (``SGLANG_PROFILE_V2=1``) or ``v1``, as the server told it; ``None``: it
            cannot say.
        profiler_source: who told it: ``plugin`` (profwin's, any protocol), ``env`` (the server's
            own environment, exposed with ``SGLANG_EXPOSE_OWN_ENV_VARS=1``) or ``process`` (the
            environment of the process serving it on this machine); ``None`` when nobody did.
        foreign_plugin: why a plugin entry the server reports cannot be used (a protocol this
            client does not speak), or ``""``.
        errors: what the plugin reported going wrong inside the server (its own words, newest
            last): an error in the engine reaches the user as itself.
        error_count: how many errors the plugin has kept since the server started, all its
            schedulers together (``errors`` holds the newest of them).
        forward_ct: rank 0's batch counter (only with the plugin).
        forward_cts: every scheduler's batch counter, in ``internal_states`` order (only with the
            plugin on each): what the stop compares the trace with.
        schedulers: how many schedulers the server listed.
        reporting: how many of them report the plugin.
    """

    version: str | None
    device: str | None
    plugin: bool
    token_windows: bool = False
    timeline: bool = False
    profiler: str | None = None
    profiler_source: str | None = None
    foreign_plugin: str = ""
    errors: tuple[str, ...] = ()
    error_count: int = 0
    forward_ct: int | None = None
    forward_cts: tuple[int, ...] = ()
    schedulers: int = 0
    reporting: int = 0

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> ServerInfo:
        raw = data.get("internal_states")
        states = list(raw) if isinstance(raw, list) else []
        ours = [s.get(STATE_KEY) if isinstance(s, Mapping) else None for s in states]
        entries = [o for o in ours if isinstance(o, Mapping)]
        reporting = [o for o in entries if _speaks(o)]
        plugin = bool(states) and len(reporting) == len(states)
        token_windows = plugin and all(o.get("token_windows") == TOKEN_WINDOWS for o in reporting)
        timeline = plugin and all(o.get("timeline") == TIMELINE for o in reporting)
        # Which profiler runs is told by any plugin entry, of any protocol (the key is the same).
        kinds = {o.get("profiler") for o in entries}
        source: str | None = None
        profiler: str | None = None
        if kinds and not kinds - {"v1", "v2"} and len(entries) == len(states):
            profiler, source = ("v2" if "v2" in kinds else "v1"), "plugin"
        else:
            env = [s.get("env_vars") if isinstance(s, Mapping) else None for s in states]
            told = {profiler_from_env(e.get(V2_ENV, "0")) for e in env if isinstance(e, Mapping)} if env else set()
            if told and all(isinstance(e, Mapping) for e in env):
                profiler, source = ("v2" if "v2" in told else "v1"), "env"
        foreign = ""
        if entries and not reporting:
            protocols = sorted({shown(o.get("protocol")) for o in entries})
            foreign = (
                f"the server's profwin-sglang plugin speaks protocol {', '.join(protocols)} and this client speaks "
                f"{PROTOCOL}: install the same profwin-sglang on both sides"
            )
        errors = tuple(
            dict.fromkeys(str(e)[:_MAX_ERROR] for o in entries for e in _listed(o.get("errors")) if isinstance(e, str))
        )[-_MAX_ERRORS:]
        error_count = sum(c for c in (o.get("error_count") for o in entries) if type(c) is int and 0 <= c < 1 << 62)
        counters = tuple(c for c in (o.get("forward_ct") for o in reporting) if type(c) is int and c >= 0)
        forward_cts = counters if plugin and len(counters) == len(states) else ()
        device = data.get("device")
        version = data.get("version")
        first = ours[0] if ours else None
        forward_ct = first.get("forward_ct") if plugin and isinstance(first, Mapping) else None
        return cls(
            version=version if isinstance(version, str) else None,
            device=device if isinstance(device, str) else None,
            plugin=plugin,
            token_windows=token_windows,
            timeline=timeline,
            profiler=profiler,
            profiler_source=source,
            foreign_plugin=foreign,
            errors=errors,
            error_count=error_count,
            forward_ct=forward_ct if isinstance(forward_ct, int) else None,
            forward_cts=forward_cts,
            schedulers=len(states),
            reporting=len(reporting),
        )

    @property
    def partial_plugin(self) -> str:
        """Why the plugin cannot be used although a scheduler reports it (``""``: it can, or none does)."""
        if 0 < self.reporting < self.schedulers:
            return (
                f"only {self.reporting} of the server's {self.schedulers} schedulers report the profwin-sglang server "
                "plugin, and each must apply profwin's windows (a relative start, a token window)"
            )
        return self.foreign_plugin


_MAX_ERROR = 2000  # characters of one error the plugin reports
_MAX_ERRORS = 8


def _listed(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


_SCHEDULER_TITLE = "sglang::scheduler"  # SGLang retitles each scheduler process (setproctitle)


def local_profiler(url: str) -> str | None:
    """``v2`` or ``v1`` for an SGLang server that runs on this machine, read from the environment
    of the process that serves ``url`` (SGLang's launcher; its schedulers inherit it); ``None``
    when no SGLang server serves ``url`` here or its environment cannot be read (another user's
    process, a proxy in front of the server, another machine)."""
    processes = serving_processes(url)
    if not processes:
        return None
    listener = processes[0]
    titled = {p.pid: p for p in processes if _titled(p, "sglang::")}
    # Its own schedulers: started by the listener, or by SGLang's own processes under it (the
    # data-parallel controller); a scheduler further down belongs to some other server.
    for scheduler in (p for p in titled.values() if _titled(p, _SCHEDULER_TITLE)):
        parent = scheduler.parent
        while parent in titled and parent != listener.pid:
            parent = titled[parent].parent
        if parent == listener.pid:
            break
    else:
        return None
    if _titled(listener, "sglang::") or listener.environ is None:
        return None  # a retitled process's /proc environ may hold its title
    return profiler_from_env(listener.environ.get(V2_ENV, "0"))


def _titled(process: LocalProcess, prefix: str) -> bool:
    return bool(process.title) and process.title[0].startswith(prefix)


def _speaks(ours: object) -> TypeGuard[Mapping[str, Any]]:
    """Whether one scheduler's plugin entry speaks this client's protocol."""
    return isinstance(ours, Mapping) and ours.get("protocol") == PROTOCOL and ours.get("relative_base") == RELATIVE_BASE


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


def _needs_disarm(plan: EnginePlan, stopped: bool) -> bool:
    # A by-stage arming survives a stop (the decode capture can still start later); a relative
    # window that had not begun is still armed (the plugin itself forgets its own windows, under
    # v2 and for tokens). Immediate modes never leave anything armed.
    if plan.details.get("profiler") == "v2" and plan.details.get("plugin"):
        return False
    return plan.mechanism == "by-stage" or (plan.mechanism == "relative" and not stopped)


class _Sglang:
    """What both kinds of target share: planning from :class:`ServerInfo`, stop, disarm, collect."""

    name: str

    def info(self, ctx: TargetContext) -> ServerInfo:
        raise NotImplementedError

    def send_start(self, body: Mapping[str, Any], ctx: TargetContext) -> None:
        raise NotImplementedError

    def send_stop(self, ctx: TargetContext) -> bool:
        raise NotImplementedError

    ran: int | None = None
    """Batches the server ran since the start, by its own counters, read at the stop (relative mode)."""

    def plan(self, spec: ProfileSpec, version: str | None, ctx: TargetContext) -> EnginePlan:
        info = self.info(ctx)
        running = version or info.version
        inactive = "" if info.plugin else info.partial_plugin or self.inactive_reason(running)
        declared = options_of(spec).profiler
        profiler, source = (info.profiler, info.profiler_source) if declared == "auto" else (declared, "declared")
        if profiler == "v2" and not info.plugin:
            # Per server: the others of a fan-out or a router keep their windows.
            raise TargetSkipped(v2_refusal(source), profiler="v2", profiler_source=source)
        return plan_for(
            spec,
            version=running,
            given=version is not None,
            plugin=info.plugin,
            device=info.device,
            inactive=inactive,
            profiler=profiler,
            profiler_source=source,
            token_plugin=info.token_windows,
            timeline_plugin=info.timeline,
            forward_ct=info.forward_cts,
            plugin_errors=info.error_count,
        )

    def inactive_reason(self, version: str | None) -> str:
        """Why the server plugin is not active on this engine (it did not report itself)."""
        return plugin_inactive_reason(version)

    def start(self, plan: EnginePlan, ctx: TargetContext) -> None:
        assert plan.request is not None
        try:
            self.send_start(plan.request, ctx)
        except TargetError as exc:
            said = self.engine_errors(plan, ctx)
            if not said:
                raise
            # SGLang answers a refused profile request with a bare 500: the plugin's own words.
            raise type(exc)(f"{exc}; the server said: {'; '.join(said)}", **exc.details) from exc

    def engine_errors(self, plan: EnginePlan, ctx: TargetContext) -> list[str]:
        """What profwin's plugin in the server kept going wrong since ``plan`` was made (its own
        words, newest last); ``[]`` without the plugin or when the server cannot be asked."""
        before = plan.details.get("plugin_errors")
        if not plan.details.get("plugin") or type(before) is not int:
            return []
        try:
            info = self.info(ctx)
        except (TargetError, ConfigError):
            return []
        new = info.error_count - before
        return list(info.errors[-new:]) if new > 0 else []

    def stop(self, plan: EnginePlan, ctx: TargetContext) -> bool:
        if plan.details.get("profiler") != "v1" and not plan.details.get("plugin"):
            # Only a by-stage capture is ever sent there, and SGLang's v2 profiler (maybe this
            # server's) raises on a manual stop, taking the scheduler down: it stops itself.
            return False
        stopped = self.send_stop(ctx)
        if _needs_disarm(plan, stopped):
            self.send_start(disarm_body(str(plan.output_dir)), ctx)
        self.ran = self._ran_since(plan, ctx)
        return stopped

    def _ran_since(self, plan: EnginePlan, ctx: TargetContext) -> int | None:
        """The most batches any scheduler ran between the plan and now, by the counters the
        plugin reports (read after the stop: every recorded batch ran before it); ``None`` when
        unknown. A relative window's trace cannot hold batches the server never ran."""
        before: list[int] = list(plan.details.get("forward_ct") or [])
        if plan.mechanism != "relative" or not before:
            return None
        try:
            now = self.info(ctx).forward_cts
        except (TargetError, ConfigError):
            return None
        if len(now) != len(before):
            return None
        return max(after - then for after, then in zip(now, before, strict=True))

    def collect(self, plan: EnginePlan, files: Callable[[], list[Path]], *, stopped: bool) -> tuple[list[Artifact], list[str]]:
        return collect(plan, files, stopped=stopped, producer=f"sglang@{self.name}", ran=self.ran)


@checked
class SglangServer(_Sglang):
    """An SGLang HTTP server (``http://host:port``)."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.client = ServerClient(url, api_key, timeout)
        self.name = self.client.url

    def _call(self, path: str, *, method: str = "POST", body: Mapping[str, Any] | None = None) -> Reply:
        return self.client.call(path, method=method, body=body)

    def info(self, ctx: TargetContext) -> ServerInfo:
        reply = self._call("/server_info", method="GET")
        if reply.status == 404:  # SGLang before /server_info existed
            reply = self._call("/get_server_info", method="GET")
        if not reply.ok or not isinstance(reply.data, Mapping):
            raise TargetError(reply.describe() if not reply.ok else f"{reply.describe()}, not a JSON object", status=reply.status)
        info = ServerInfo.parse(reply.data)
        if info.profiler is None:
            local = local_profiler(self.client.url)
            if local is not None:
                info = evolve(info, profiler=local, profiler_source="process")
        return info

    def send_start(self, body: Mapping[str, Any], ctx: TargetContext) -> None:
        reply = self._call("/start_profile", body=body)
        if reply.ok:
            return
        if reply.status is None and "did not answer" in reply.error:
            raise TargetError(
                f"{reply.describe()} — SGLang's /start_profile can hang (e.g. with DP attention, SGLang #22083); "
                "the server may still start profiling, so call stop on it"
            )
        raise (EngineBusy if _BUSY in reply.text.lower() else TargetError)(reply.describe(), status=reply.status)

    def send_stop(self, ctx: TargetContext) -> bool:
        reply = self._call("/stop_profile")
        if reply.ok:
            return True
        if _is_not_running(reply):
            return False
        raise TargetError(reply.describe(), status=reply.status)


def _is_not_running(reply: Reply) -> bool:
    """Whether ``/stop_profile`` failed because nothing was recording.

    SGLang 0.5.23 turns the scheduler's "Profiling is not in progress" into a bare HTTP 500
    "Internal Server Error" (older servers put the message in the body); the stop path has no
    other failure that answers, so a 500 without another message means exactly that.
    """
    body = " ".join(reply.text.split()).lower()
    return reply.status == 500 and (_NOT_RUNNING in body or body in ("", "internal server error"))


def is_engine(target: object) -> bool:
    """Whether ``target`` looks like an ``sglang.Engine`` (duck-typed: sglang is not imported)."""
    return hasattr(target, "tokenizer_manager") and callable(getattr(target, "start_profile", None))


@checked
class SglangEngine(_Sglang):
    """An in-process ``sglang.Engine`` (its schedulers run in child processes on this machine).

    Under ``async with`` its tokenizer manager's coroutines run on the caller's loop; under
    ``with`` the Engine's own blocking methods run, bounded by the timeout.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.name = f"engine:{type(engine).__name__}@{id(engine):x}"
        self.req_type = True

    def info(self, ctx: TargetContext) -> ServerInfo:
        if ctx.loop is not None:
            states = ctx.call(self.engine.tokenizer_manager.get_internal_state, "get_internal_state")
            info = ServerInfo.parse({"internal_states": states})
        else:
            info = ServerInfo.parse(ctx.bounded(self.engine.get_server_info, "Engine.get_server_info"))
        args = getattr(self.engine.tokenizer_manager, "server_args", None)
        self.req_type = features(info.version or sglang_version()).req_type
        return evolve(
            info,
            version=info.version or sglang_version(),
            device=info.device or getattr(args, "device", None),
            # The Engine's schedulers were started from this process, with its environment.
            profiler=info.profiler or profiler_from_env(os.environ.get(V2_ENV, "0")),
            profiler_source=info.profiler_source or "process",
        )

    def inactive_reason(self, version: str | None) -> str:
        """The Engine's schedulers run in this environment: the reason is known exactly here."""
        return unavailable_here() or plugin_inactive_reason(version)

    def send_start(self, body: Mapping[str, Any], ctx: TargetContext) -> None:
        try:
            if ctx.loop is not None:
                manager = self.engine.tokenizer_manager
                if self.req_type:
                    from sglang.srt.managers.io_struct import ProfileReq, ProfileReqType  # the engine is here

                    request = build_profile_req(ProfileReq, ProfileReqType, body)
                    ctx.call(lambda: manager.start_profile(request), "start_profile")
                else:  # before 0.5.23 the tokenizer manager took the fields as keywords
                    ctx.call(lambda: manager.start_profile(**body), "start_profile")
            else:
                ctx.bounded(lambda: self.engine.start_profile(**body), "Engine.start_profile")
        except (TargetError, RuntimeError) as exc:
            raise (EngineBusy if _BUSY in str(exc).lower() else TargetError)(str(exc)) from exc

    def send_stop(self, ctx: TargetContext) -> bool:
        try:
            if ctx.loop is not None:
                ctx.call(self.engine.tokenizer_manager.stop_profile, "stop_profile")
            else:
                ctx.bounded(self.engine.stop_profile, "Engine.stop_profile")
        except TargetError:
            raise
        except RuntimeError as exc:
            if _NOT_RUNNING in str(exc).lower():
                return False
            raise TargetError(str(exc)) from exc
        return True
