"""Spec -> the :class:`~profwin.plugin.engines.EnginePlan` an SGLang server takes: the ``ProfileReq``
fields of ``/start_profile`` and the launch environment (pure functions, no sglang import).

:func:`plan_for` reads ``options.sglang`` once and chooses the window's encoding once
(:func:`profwin_sglang.window.plan_window`); the pieces it is made of (:func:`activities_for`,
:func:`profile_request`, :func:`launch_env`) are public for callers that build a request
themselves.

SGLang drops activity names it does not know without a word, and ``with_stack``/``record_shapes``
default to *on* in 0.5.23 when left out, so profwin validates every activity name before sending
and always sends both booleans.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Sequence
from typing import Any, get_args

from profwin.plugin import ConfigError, ProfileSpec, checked, engine_flavours, resolve_activities, shown
from profwin.plugin.engines import EnginePlan, EngineVersion, encode_timeline
from profwin.plugin.remote import is_session_prefix
from profwin_sglang.options import SglangOptions, options_of
from profwin_sglang.server_plugin import FIRST_VERSION
from profwin_sglang.versions import Features, features
from profwin_sglang.window import ASSUMED_V1, Mode, Plan, plan_window

__all__ = ["activities_for", "check_state", "launch_env", "new_profile_id", "plan_for", "profile_request"]

# profwin activity -> SGLang activity. On Ascend SGLang patches ProfilerActivity.CUDA to NPU, so
# "GPU" is what records the NPU there.
_ACTIVITY = {"cpu": "CPU", "cuda": "GPU", "npu": "GPU", "xpu": "XPU"}
# server device -> the profwin activity that records its accelerator
_ACCELERATOR = {"cuda": "cuda", "musa": "cuda", "rocm": "cuda", "hip": "cuda", "npu": "npu", "xpu": "xpu"}


@checked
def activities_for(spec: ProfileSpec, device: str | None, *, options: SglangOptions | None = None) -> tuple[list[str], list[str]]:
    """The SGLang activity names for ``spec`` on a server whose ``--device`` is ``device``.

    Returns ``(activities, dropped)``; ``dropped`` lists what the device cannot record when
    ``spec.on_unavailable == "drop"`` (otherwise that raises a ConfigError). ``device=None``
    (unknown) trusts the spec. ``options``: ``spec``'s ``options.sglang`` when already read.
    """
    options = options if options is not None else options_of(spec)
    accelerator = None if device is None else _ACCELERATOR.get(device)
    if accelerator == "npu" or (spec.activities is not None and "npu" in spec.activities):
        # Installed hardware plugins (profwin-npu) warn once for what SGLang on NPU ignores.
        engine_flavours("sglang", None, spec)
    # (what the user asked for, SGLang name): profwin names for the spec's activities, SGLang's own
    # names for options.sglang.activities, MEM and CUDA_PROFILER for the record options.
    wanted: list[tuple[str, str]]
    if options.activities is not None:
        wanted = [(name, name) for name in options.activities]
    elif spec.activities is None:
        wanted = [("cpu", "CPU")]
        if accelerator is not None or device is None:
            wanted.append((accelerator or "cuda", _ACTIVITY[accelerator or "cuda"]))
    else:
        wanted = [(name, _ACTIVITY[name]) for name in spec.activities]
    if spec.memory:
        wanted.append(("memory", "MEM"))
    if options.cuda_profiler:
        wanted.append(("cuda_profiler", "CUDA_PROFILER"))
    sglang_name = dict(wanted)
    why = {} if device is None else {asked: _unavailable(asked, name, device, accelerator) for asked, name in wanted}
    kept, dropped = resolve_activities(
        spec.replace(activities=None),
        default=[asked for asked, _ in wanted],
        unavailable={k: v for k, v in why.items() if v is not None},
        warn=False,
    )
    return list(dict.fromkeys(sglang_name[a] for a in kept)), list(dropped)


def _unavailable(asked: str, name: str, device: str, accelerator: str | None) -> str | None:
    if name == "CPU":
        return None
    if name in ("MEM", "CUDA_PROFILER"):
        # SGLang calls torch.cuda.memory._record_memory_history / cudaProfilerStart on the scheduler
        # thread; on a CPU build that raises and takes the scheduler down.
        return None if accelerator == "cuda" else f"needs a CUDA server (this one runs --device {device})"
    if name == "RPD":
        return None if device in ("rocm", "hip", "cuda") else f"needs ROCm (this server runs --device {device})"
    if asked in ("cuda", "npu", "xpu") and asked != accelerator:
        return f"the server runs --device {device}"
    if name in ("GPU", "XPU") and accelerator is None:
        return f"the server runs --device {device}"
    return None


def _check_capture_range(options: SglangOptions, chosen: Plan) -> None:
    """``CUDA_PROFILER`` opens nsys's capture range when SGLang starts recording and closes it at the
    stop (``cudaProfilerStart``/``Stop`` on the server's base GPU, 0.5.12 and 0.5.23 alike): the
    range is the recorded steps. A trimmed plan records steps before the window, and an nsys report
    cannot be cut afterwards, so it is refused rather than sent."""
    if options.cuda_profiler and chosen.trims:
        raise ConfigError(
            f"nsys's capture range cannot be trimmed: without the server plugin SGLang would record steps "
            f"{chosen.recorded} for window {chosen.window}. Install {_PLUGIN}, or start the window at step 0",
            path="options.sglang.cuda_profiler",
        )


def new_profile_id() -> str:
    """A profile id no other session shares: seconds since the epoch plus 8 random hex digits."""
    return f"{int(time.time())}-{uuid.uuid4().hex[:8]}"


_PROFILE_ID = re.compile(r"[0-9]{1,20}-[0-9a-f]{8}")  # what new_profile_id makes
_DETAILS = (
    "mode",
    "plugin",
    "plugin_inactive",
    "device",
    "profile_id",
    "client_profile_id",
    "prefix",
    "profiler",
    "profiler_source",
    "forward_ct",
    "plugin_errors",
    "timeline",
)
_MAX_SCHEDULERS = 65_536


def check_state(plan: EnginePlan, spec: ProfileSpec) -> None:
    """Refuse a plan read back from a state file (untrusted) that :func:`plan_for` could not have
    made for this session: the stop's collect finds, trims and deletes files by the prefix, the
    profile id and the mode, so each must be one profwin makes.

    Raises :class:`~profwin.ConfigError` with the path of the first field that is wrong.
    """
    details = plan.details
    if sorted(details) != sorted(_DETAILS):
        raise ConfigError(f"must hold exactly {list(_DETAILS)} (got {shown(sorted(details))})", path="details")
    mode = details["mode"]
    if mode not in get_args(Mode) or plan.mechanism != str(mode).replace("_", "-"):
        raise ConfigError(f"must be one of {list(get_args(Mode))}, the plan's mechanism (got {shown(mode)})", path="details.mode")
    if not is_session_prefix(details["prefix"], spec):
        raise ConfigError(
            f"must be this session's prefix {spec.prefix!r} (or {spec.prefix}-N; got {shown(details['prefix'])})",
            path="details.prefix",
        )
    profile_id = details["profile_id"]
    if not (isinstance(profile_id, str) and _PROFILE_ID.fullmatch(profile_id)):
        raise ConfigError(
            f"must be a profile id profwin makes, like 1764576000-0123abcd (got {shown(profile_id)})", path="details.profile_id"
        )
    if plan.request is not None and plan.request.get("profile_id") != profile_id:
        raise ConfigError(
            f"must be the plan's profile id {profile_id!r} (got {shown(plan.request.get('profile_id'))})",
            path="request.profile_id",
        )
    errors = details["plugin_errors"]
    if not (errors is None or (type(errors) is int and 0 <= errors < 1 << 62)):
        raise ConfigError(f"must be a count of errors or null (got {shown(errors)})", path="details.plugin_errors")
    counters = details["forward_ct"]
    if not (
        isinstance(counters, list)
        and len(counters) <= _MAX_SCHEDULERS
        and all(type(c) is int and 0 <= c < 1 << 62 for c in counters)
    ):
        raise ConfigError(f"must be a list of batch counts (got {shown(counters)})", path="details.forward_ct")
    for key, allowed in (
        ("timeline", (bool,)),
        ("client_profile_id", (bool,)),
        ("plugin", (bool, type(None))),
        ("plugin_inactive", (str, type(None))),
        ("device", (str, type(None))),
        ("profiler", (str, type(None))),
        ("profiler_source", (str, type(None))),
    ):
        if type(details[key]) not in allowed:
            raise ConfigError(
                f"must be {' or '.join(t.__name__ for t in allowed)} (got {shown(details[key])})", path=f"details.{key}"
            )


@checked
def profile_request(
    spec: ProfileSpec, plan: Plan, *, activities: list[str], profile_id: str, options: SglangOptions | None = None
) -> dict[str, Any]:
    """The JSON body of ``POST /start_profile`` (and the ``Engine.start_profile`` keywords);
    ``options``: ``spec``'s ``options.sglang`` when already read."""
    options = options if options is not None else options_of(spec)
    body: dict[str, Any] = {
        "output_dir": str(spec.output_dir),
        "activities": list(activities),
        "with_stack": spec.stack,
        "record_shapes": spec.shapes,
        "profile_prefix": spec.prefix,
        "profile_id": profile_id,
        "merge_profiles": options.merge_profiles,
        "profile_by_stage": plan.mode == "by_stage",
    }
    if plan.start_step is not None:
        body["start_step"] = plan.start_step
    if plan.num_steps is not None:
        body["num_steps"] = plan.num_steps
    if options.detailed_annotations:
        body["detailed_annotations"] = True
    return body


@checked
def launch_env(spec: ProfileSpec) -> dict[str, str]:
    """Environment for launching an SGLang server that profwin will drive.

    ``SGLANG_PROFILE_WITH_STACK``/``..._RECORD_SHAPES`` only ever turn recording *off* in SGLang, so
    they are set to false when the spec does not want them (a guard against clients that leave the
    fields out); ``SGLANG_PROFILE_V2`` stays off because the v2 manager refuses ``start_step`` and
    has no manual stop; ``SGLANG_EXPOSE_OWN_ENV_VARS`` lets a server without profwin's plugin tell
    clients (``/server_info``) which profiler it runs, the one thing no harmless request reveals.
    """
    env = {"SGLANG_TORCH_PROFILER_DIR": str(spec.output_dir), "SGLANG_PROFILE_V2": "0", "SGLANG_EXPOSE_OWN_ENV_VARS": "1"}
    if not spec.stack:
        env["SGLANG_PROFILE_WITH_STACK"] = "false"
    if not spec.shapes:
        env["SGLANG_PROFILE_RECORD_SHAPES"] = "false"
    return env


# A server whose version cannot be read: assume the older, less exact behaviour.
_UNKNOWN = Features(version=None, req_type=True, client_profile_id=False, exact_immediate=False, server_info_path="/server_info")
_PLUGIN = (
    "the profwin-sglang server plugin in the SGLang server's environment (pip install profwin-sglang there, then restart it)"
)


@checked
def plan_for(
    spec: ProfileSpec,
    *,
    version: str | None,
    given: bool,
    plugin: bool | None,
    device: str | None,
    profile_id: str | None = None,
    inactive: str = "",
    profiler: str | None = "v1",
    profiler_source: str | None = None,
    token_plugin: bool | None = None,
    forward_ct: Sequence[int] = (),
    plugin_errors: int | None = None,
    timeline_plugin: bool | None = None,
) -> EnginePlan:
    """The plan for ``spec`` on a server of ``version`` whose server plugin answered (``plugin``).

    ``plugin=None``: the server was not asked (``profwin args``, a launcher). The request is then
    the one a stock server honours (SGLang's default profiler, no plugin: record from the session
    start and trim), and the plan's ``alternative`` is the exact request for a server with the
    plugin, with what it needs; a server declared to run the v2 profiler gets only the plugin's
    request (a stock request would take it down), with the requirement.

    ``inactive``: why the plugin is not active on that server, for the warning of the trim
    fallback. ``profiler``: the profiler the server runs (``v1``, ``v2``; ``None`` when it cannot
    say: planned as SGLang's default, v1, with :data:`~profwin_sglang.window.ASSUMED_V1` in the
    notes), unless ``options.sglang.profiler`` says it; ``profiler_source``: who said it.
    ``token_plugin``: the plugin decides token windows there (``None``: as ``plugin``).
    ``forward_ct``: each scheduler's batch counter as the plugin reported it before the start
    (kept in the plan's details: the stop compares the trace with how many batches ran since).
    ``plugin_errors``: how many errors the plugin had kept before the start (the stop reports
    the ones after it). ``timeline_plugin``: every scheduler's plugin records session timelines
    (``None``: not asked); the session timeline (``record: [timeline]``) is asked for only then
    (its flag on ``start_step``), else the window is recorded without one and a note says why."""
    options = options_of(spec)
    feats = features(version) if version else (features(None) if plugin is None else _UNKNOWN)
    running, source = (profiler, profiler_source) if options.profiler == "auto" else (options.profiler, "declared")
    known = running if running in ("v1", "v2") else None
    assumed = known is None and not plugin
    planned = dict(features=feats, start=options.start, by_stage=options.by_stage, inactive=inactive)
    alternative = None
    if plugin is None and known != "v2" and options.start != "relative":
        chosen = plan_window(spec.window, plugin=False, profiler="v1", token_plugin=False, **planned)  # type: ignore[arg-type]
        exact = _with_plugin(spec, feats, options) if _hookable(feats) else None
        if exact is not None and (chosen.trims or exact.mode == "tokens"):
            alternative = exact
    else:
        asked = bool(plugin) or plugin is None  # v2 declared, not asked: only the plugin's request is safe
        chosen = plan_window(
            spec.window,
            plugin=asked,
            profiler=known if plugin is not None else "v1",  # type: ignore[arg-type]
            token_plugin=bool(plugin if token_plugin is None else token_plugin) or plugin is None,
            **planned,  # type: ignore[arg-type]
        )
    _check_capture_range(options, chosen)
    activities, dropped = activities_for(spec, device, options=options)
    body = profile_request(spec, chosen, activities=activities, profile_id=profile_id or new_profile_id(), options=options)
    notes = [chosen.warning] if chosen.warning else []
    timeline = bool(spec.timeline and timeline_plugin)
    if timeline:
        body["start_step"] = encode_timeline(body.get("start_step"))
    elif spec.timeline:
        why = inactive or (
            "the server was not asked"
            if timeline_plugin is None
            else "its schedulers do not report that the plugin records timelines"
        )
        notes.append(f"no session timeline is recorded: {why}; the timeline needs {_PLUGIN}")
    if plugin is None and chosen.trims:
        notes.append(
            f"sent by hand, this request records steps {chosen.recorded} of the session: keep {chosen.window} with "
            f"`profwin trim TRACE --window {chosen.window}` (profwin start/stop and remote sessions trim for you)"
        )
    if assumed and plugin is not None:
        notes.append(ASSUMED_V1)
    if dropped:
        notes.append(f"dropped {', '.join(dropped)}")
    needs = plugin is None and chosen.mode in ("relative", "tokens")
    return EnginePlan(
        engine="sglang",
        version=None if feats.version is None else str(feats.version),
        version_source="given" if given else ("assumed" if not version else "server" if plugin is not None else "installed"),
        mechanism=chosen.mode.replace("_", "-"),
        window=chosen.window,
        records=chosen.recorded,
        output_dir=spec.output_dir,
        env=launch_env(spec),
        request=body,
        server_requirement=_PLUGIN if needs else None,
        fallback=_V2_ONLY if needs else None,
        alternative=None
        if alternative is None
        else {
            "needs": _PLUGIN,
            "request": profile_request(spec, alternative, activities=activities, profile_id=body["profile_id"], options=options),
            "records": "the steps of the token window (decided in the server)"
            if alternative.mode == "tokens"
            else str(alternative.recorded),
        },
        notes=tuple(notes),
        details={
            "mode": chosen.mode,
            "plugin": plugin,
            "plugin_inactive": inactive or None,
            "device": device,
            "profile_id": body["profile_id"],
            "client_profile_id": feats.client_profile_id,
            "prefix": spec.prefix,
            "profiler": known or "v1",
            "profiler_source": source if known else "assumed",
            "forward_ct": list(forward_ct),
            "plugin_errors": plugin_errors,
            "timeline": timeline,
        },
    )


_V2_ONLY = (
    "a server without the plugin never reaches the encoded start_step and records nothing; a stock request would take "
    "a server that runs the v2 profiler down, so none is given"
)


def _hookable(feats: Features) -> bool:
    """Whether the server plugin can hook an SGLang of these features (unknown: the newest)."""
    return feats.version is None or feats.version >= EngineVersion.parse(FIRST_VERSION)


def _with_plugin(spec: ProfileSpec, feats: Features, options: SglangOptions) -> Plan | None:
    """The exact plan for a server that runs the plugin, or ``None`` where the options forbid it."""
    try:
        return plan_window(
            spec.window, features=feats, plugin=True, start=options.start, by_stage=options.by_stage, token_plugin=True
        )
    except ConfigError:
        return None
