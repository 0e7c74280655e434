"""The two kinds of live vLLM engine a session drives: a ``vllm serve`` server by URL, and an
in-process ``LLM`` or ``AsyncLLM``.

On stop a session always calls ``stop_profile``, also after vLLM stopped by itself at
``max_iterations``: up to 0.28 that auto-stop leaves the worker's session active, so the next
``start_profile`` is silently ignored; from 0.29 it resets the worker, but from 0.32 the
frontend's "session active" flag stays set and the next start is refused (HTTP 409,
``ProfilerAlreadyActiveError``). A stop is harmless after an auto-stop on every version.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from profwin.plugin import Artifact, ConfigError, PluginError, ProfileSpec, checked
from profwin.plugin.engines import (
    EngineBusy,
    EnginePlan,
    EngineVersion,
    TargetContext,
    TargetError,
    VersionSource,
    decode_timeline,
    render_plan,
    serving_processes,
    timeline_artifacts,
)
from profwin.plugin.remote import Reply, ServerClient
from profwin_vllm.engine_plugin import PROTOCOL, STATE_ROUTE, TIMELINE
from profwin_vllm.folders import elsewhere, folder_field, launched_folder, reported_folder, serves_vllm
from profwin_vllm.plan import fixed_at_launch, launched_window, plan_for, token_fallback
from profwin_vllm.traces import proton_artifacts, session_artifacts, trimmed
from profwin_vllm.versions import NEWEST_KNOWN, Mechanism, mechanism, resolve_version

__all__ = ["VllmEngine", "VllmServer"]


def _relaunch_hint(plan: EnginePlan) -> str:
    if plan.launch:
        return render_plan(plan, "serve").splitlines()[0]
    return "these environment variables: " + "; ".join(f"{k}={v}" for k, v in plan.env.items())


def launch_bounds(reports: object) -> tuple[int, int] | None:
    """The ``(delay_iterations, max_iterations)`` every worker reports it was launched with, or
    ``None`` when they do not say (an older engine plugin) or do not agree."""
    if not isinstance(reports, list) or not reports:
        return None
    found = {tuple(r["bounds"]) if isinstance(r, Mapping) and isinstance(r.get("bounds"), list) else None for r in reports}
    if len(found) != 1:
        return None
    (bounds,) = found
    if bounds is None or len(bounds) != 2 or not all(type(b) is int and b >= 0 for b in bounds):
        return None
    return int(bounds[0]), int(bounds[1])


def plugin_answer(reports: object) -> tuple[bool, str]:
    """Whether every worker's ``profwin_report`` says it decides token windows, and why not: a
    token window is sent only when all of them do (one rank without it would record steps)."""
    if not isinstance(reports, list) or not reports:
        return False, "the engine's workers gave no report of profwin-vllm's engine plugin"
    missing = [
        str(r.get("rank")) if isinstance(r, Mapping) else "?"
        for r in reports
        if not (isinstance(r, Mapping) and r.get("protocol") == PROTOCOL and r.get("token_windows") is True)
    ]
    if missing:
        return False, f"worker rank(s) {', '.join(missing)} of {len(reports)} do not run profwin-vllm's engine plugin"
    return True, ""


def timeline_answer(reports: object) -> bool:
    """Whether every worker's ``profwin_report`` says it records session timelines (a rank
    without would leave its share out: none is asked then)."""
    return (
        isinstance(reports, list)
        and bool(reports)
        and all(isinstance(r, Mapping) and r.get("timeline") == TIMELINE for r in reports)
    )


_NO_PLUGIN = (
    "the engine does not run profwin-vllm's engine plugin (profwin-vllm is not installed in vLLM's environment, "
    "VLLM_PLUGINS leaves out 'profwin', or the engine started before it was installed)"
)


def error_count(reports: object) -> int:
    """How many errors the workers' engine plugins have kept, all together (0 when they do not say)."""
    if not isinstance(reports, list):
        return 0
    return sum(
        c
        for c in (r.get("error_count") if isinstance(r, Mapping) else None for r in reports)
        if type(c) is int and 0 <= c < 1 << 62
    )


def new_errors(reports: object, before: object) -> list[str]:
    """The errors the workers kept since ``before`` (a count :func:`error_count` gave), newest last."""
    if type(before) is not int or not isinstance(reports, list):
        return []
    new = error_count(reports) - before
    said = [str(e)[:2000] for r in reports if isinstance(r, Mapping) for e in (r.get("errors") or []) if isinstance(e, str)]
    return said[-new:] if new > 0 else []


def _with_errors(plan: EnginePlan, reports: object) -> EnginePlan:
    return plan.replace(details={**plan.details, "plugin_errors": error_count(reports)}) if isinstance(reports, list) else plan


def _kind(plan: EnginePlan) -> str:
    """The profiler kind a plan launches (``torch`` for plans without a launch config)."""
    return str(plan.launch.get("profiler_config", {}).get("profiler", "torch"))


def _collect(plan: EnginePlan, files: Callable[[], list[Path]], producer: str) -> tuple[list[Artifact], list[str]]:
    prefix = plan.details["start_kwargs"].get("profile_prefix") if plan.details["takes_prefix"] else None
    kind, ranks = _kind(plan), plan.details["ranks"]
    if kind == "cuda":
        return [], ["vLLM's 'cuda' profiler writes no file: the nsys report holds this session's capture range"]
    if kind == "proton":
        found = files()
        timelines = [t for t in timeline_artifacts(found, prefix=prefix, producer=producer) if ranks == "all" or t.rank in ranks]
        return proton_artifacts(found, prefix=prefix, ranks=ranks, producer=producer) + timelines, []
    recorded = plan.window if plan.records is None else plan.records
    found = files()
    artifacts = session_artifacts(found, window=recorded, prefix=prefix, ranks=ranks, producer=producer)
    timelines = [t for t in timeline_artifacts(found, prefix=prefix, producer=producer) if ranks == "all" or t.rank in ranks]
    if recorded == plan.window:
        return artifacts + timelines, []
    kept, notes = trimmed(artifacts, plan.window)
    return kept + timelines, notes


@checked
class VllmServer:
    """A ``vllm serve`` server, by URL."""

    def __init__(self, url: str, *, api_key: str | None, timeout: float) -> None:
        self.client = ServerClient(url, api_key, timeout)
        self.name = self.client.url
        self._no_workers = ""

    def _post(self, path: str, plan: EnginePlan, body: Mapping[str, Any] | None = None) -> Reply:
        reply = self.client.call(path, body=body)
        if not reply.ok:
            raise (EngineBusy if reply.status == 409 else TargetError)(self._failure(path, reply, plan), status=reply.status)
        return reply

    def _failure(self, path: str, reply: Reply, plan: EnginePlan) -> str:
        """The message for a failed POST, saying what to do about it."""
        if reply.status is None or reply.status not in (400, 404, 409) or reply.misaddressed:
            return reply.describe()
        said = f"POST {path} returned {reply.status}"
        if reply.status == 404:
            return (
                f"{said}: this server was started without a profiler, so it has no profiling endpoints. "
                f"Relaunch it with {_relaunch_hint(plan)}"
            )
        if reply.status == 409:
            return (
                f"{said}: a profiling session is already active on this server ({reply.detail}). "
                f"Stop it with `profwin stop --engine vllm --url {self.name} --out DIR`, or pass on_active='restart' "
                "to stop it and start again"
            )
        return f"{said}: vLLM rejected the request: {reply.detail}"

    def plan(self, spec: ProfileSpec, version: str | None, ctx: TargetContext) -> EnginePlan:
        source: VersionSource = "given"
        notes: tuple[str, ...] = ()
        if version is None:
            reply = self.client.call("/version", method="GET", expect="object")
            if reply.status is None:
                raise TargetError(f"GET /version failed: {reply.error}")
            found = reply.data.get("version") if reply.ok and isinstance(reply.data, Mapping) else None
            try:
                version, source = str(EngineVersion.parse(found)), "server"
            except ConfigError:
                version, source = str(NEWEST_KNOWN), "assumed"
                notes = (f"GET /version gave no version (HTTP {reply.status}); assuming vLLM {NEWEST_KNOWN}",)
        parsed = EngineVersion.parse(version)
        fixed = mechanism(parsed) in (Mechanism.LAUNCH_CONFIG, Mechanism.ENV)
        workers = self._workers() if spec.window.in_tokens or fixed or spec.timeline else None
        plugin, inactive = plugin_answer(workers) if spec.window.in_tokens and workers is not None else (None, "")
        if spec.window.in_tokens and workers is None:
            plugin, inactive = False, self._no_workers
        timeline = None if not spec.timeline else timeline_answer(workers)
        why = inactive or (self._no_workers if workers is None else "")
        plan = plan_for(spec, parsed, source, plugin=plugin, inactive=why, timeline_plugin=timeline)
        if not plan.per_session:
            bounds = launch_bounds(workers)
            planned = (decode_timeline(plan.details["delay_iterations"])[0], plan.details["max_iterations"])
            launched_for_tokens = bounds is not None and (decode_timeline(bounds[0])[0], bounds[1]) == planned
            if bounds is not None and plan.window.in_tokens and not launched_for_tokens:
                # Launched for other bounds than this token window's: its steps, recorded and
                # trimmed as a step window's would be, and said so (never nothing).
                why = f"this server was launched for engine steps {launched_window(*bounds)}, not for this token window"
                steps = plan_for(
                    spec.replace(window=spec.window.in_steps()),
                    parsed,
                    source,
                    plugin=plugin,
                    inactive=why,
                    timeline_plugin=timeline,
                )
                plan = steps.replace(notes=(token_fallback(spec.window, why), *steps.notes))
            if bounds is not None:
                plan = fixed_at_launch(plan, *bounds)  # the workers said how the server was launched
            else:
                notes += (
                    f"vLLM {plan.version} takes the window only at launch and this server does not report its launch "
                    f"config (profwin-vllm's engine plugin, GET {STATE_ROUTE}): it records window {plan.window} only "
                    f"if the server was launched with {_relaunch_hint(plan)}",
                )
        self._check_folder(plan, workers, parsed)
        return _with_errors(plan, workers).replace(notes=plan.notes + notes)

    def _check_folder(self, plan: EnginePlan, workers: list[Any] | None, version: EngineVersion) -> None:
        """Refuse a session that would look for the traces elsewhere than this server writes them
        (:mod:`profwin_vllm.folders`): only a vLLM server that runs on this machine is judged."""
        processes = serving_processes(self.client.url)
        if not processes or not serves_vllm(processes[0].title):
            return
        reports = workers if workers is not None else self._workers()
        why = elsewhere(reported_folder(reports) or launched_folder(processes[0], version), plan.output_dir)
        if why is not None:
            raise TargetError(why)

    def engine_errors(self, plan: EnginePlan, ctx: TargetContext) -> list[str]:
        """What the engine plugins kept going wrong since ``plan`` was made (their own words)."""
        if plan.details.get("plugin_errors") is None:
            return []
        return new_errors(self._workers(), plan.details["plugin_errors"])

    def _workers(self) -> list[Any] | None:
        """Every worker's report of profwin-vllm's engine plugin (``GET /profwin``), or ``None``
        (and why, in ``_no_workers``) when the server has no such route or it failed."""
        reply = self.client.call(STATE_ROUTE, method="GET", expect="object")
        if reply.status == 404:
            self._no_workers = _NO_PLUGIN
            return None
        state = reply.data.get("profwin_vllm") if reply.ok and isinstance(reply.data, Mapping) else None
        workers = state.get("workers") if isinstance(state, Mapping) else None
        if not isinstance(workers, list):
            self._no_workers = f"GET {STATE_ROUTE} failed: {reply.describe()}"
            return None
        return workers

    def start(self, plan: EnginePlan, ctx: TargetContext) -> None:
        self._post("/start_profile", plan, plan.request if plan.per_session else None)
        _refused(self.engine_errors(plan, ctx))

    def stop(self, plan: EnginePlan, ctx: TargetContext) -> bool:
        self._post("/stop_profile", plan)
        return True

    def collect(self, plan: EnginePlan, files: Callable[[], list[Path]], *, stopped: bool) -> tuple[list[Artifact], list[str]]:
        return _collect(plan, files, f"vllm@{self.name}")


@checked
class VllmEngine:
    """An in-process ``vllm.LLM`` or ``AsyncLLM`` (whose calls are coroutines: ``async with``)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.name = f"engine:{type(engine).__name__}@{id(engine):x}"
        vllm_config = getattr(engine, "vllm_config", None)
        if vllm_config is None and hasattr(engine, "llm_engine"):
            vllm_config = getattr(engine.llm_engine, "vllm_config", None)
        if vllm_config is None:
            raise ConfigError(f"expected a vllm.LLM, an AsyncLLM or server URL(s) (got {type(engine).__name__})", path="target")
        self.config = getattr(vllm_config, "profiler_config", None)

    def plan(self, spec: ProfileSpec, version: str | None, ctx: TargetContext) -> EnginePlan:
        if version is None and "vllm" in sys.modules:
            version = getattr(sys.modules["vllm"], "__version__", None)
        planned, source = resolve_version(version)
        config = self.config
        reports, why = self._reports(ctx) if spec.window.in_tokens or spec.timeline else (None, "")
        plugin, inactive = ((False, why) if why else plugin_answer(reports)) if spec.window.in_tokens else (None, "")
        timeline = None if not spec.timeline else timeline_answer(reports)
        plan = _with_errors(
            plan_for(_with_platform(spec), planned, source, plugin=plugin, inactive=inactive or why, timeline_plugin=timeline),
            reports,
        )
        if config is None or getattr(config, "profiler", None) is None:
            raise ConfigError(
                f"this engine was built without a profiler; build it with {render_plan(plan, 'python').splitlines()[0]}",
                path="target",
            )
        if config.profiler != _kind(plan):
            raise ConfigError(
                f"this engine runs vLLM's {config.profiler!r} profiler and the spec asks for {_kind(plan)!r}: set "
                f"options.vllm.profiler: {config.profiler}, or rebuild the engine with "
                f"{render_plan(plan, 'python').splitlines()[0]}",
                path="options.vllm.profiler",
            )
        if plan.mechanism != Mechanism.PER_SESSION.value:
            try:
                plan = fixed_at_launch(plan, config.delay_iterations, config.max_iterations)
            except ConfigError as exc:
                raise ConfigError(
                    f"{exc.reason}; rebuild it with {render_plan(plan, 'python').splitlines()[0]}", path="window"
                ) from None
        if config.profiler == "cuda":
            return plan  # nsys writes the report, wherever its -o says
        directory = str(getattr(config, folder_field(config.profiler)))
        if "://" in directory:
            raise PluginError(f"this engine writes traces to {directory}, which profwin cannot list; use a local directory")
        return plan.replace(output_dir=Path(directory))

    def _reports(self, ctx: TargetContext) -> tuple[object, str]:
        """Every worker's ``profwin_report`` (``collective_rpc``), or ``None`` and why not: a
        worker without the plugin refuses the method, which is harmless."""
        try:
            reports = ctx.call(lambda: self.engine.collective_rpc("profwin_report"), "collective_rpc")
        except (TargetError, ConfigError):
            raise
        except Exception as exc:
            return None, f"{_NO_PLUGIN}: collective_rpc('profwin_report') failed ({type(exc).__name__})"
        return (list(reports) if isinstance(reports, (list, tuple)) else reports), ""

    def engine_errors(self, plan: EnginePlan, ctx: TargetContext) -> list[str]:
        """What the engine plugins kept going wrong since ``plan`` was made (their own words)."""
        if plan.details.get("plugin_errors") is None:
            return []
        reports, _ = self._reports(ctx)
        return new_errors(reports, plan.details["plugin_errors"])

    def start(self, plan: EnginePlan, ctx: TargetContext) -> None:
        kwargs = dict(plan.details["start_kwargs"])
        try:
            ctx.call(lambda: self.engine.start_profile(**kwargs), "start_profile")
        except (TargetError, ConfigError):
            raise
        except Exception as exc:
            text = str(exc).lower()
            busy = "already" in text and ("active" in text or "running" in text or "progress" in text)
            message = f"vLLM refused start_profile: {type(exc).__name__}: {exc}"
            raise (EngineBusy if busy else TargetError)(message) from exc
        _refused(self.engine_errors(plan, ctx))

    def stop(self, plan: EnginePlan, ctx: TargetContext) -> bool:
        try:
            ctx.call(self.engine.stop_profile, "stop_profile")
        except (TargetError, ConfigError):
            raise
        except Exception as exc:
            raise TargetError(f"stop_profile failed: {type(exc).__name__}: {exc}") from exc
        return True

    def collect(self, plan: EnginePlan, files: Callable[[], list[Path]], *, stopped: bool) -> tuple[list[Artifact], list[str]]:
        return _collect(plan, files, "vllm")


def _refused(errors: list[str]) -> None:
    """vLLM's ``profile`` returns nothing a client sees: a start the engine plugin refused (or
    failed in) is reported here, in its words."""
    if errors:
        raise TargetError(f"the engine refused the start: {'; '.join(errors)}")


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
