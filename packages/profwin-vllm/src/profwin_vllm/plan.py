"""Window and spec -> the :class:`~profwin.plugin.engines.EnginePlan` a vLLM version takes. Pure: no vLLM needed.

The off-by-one. vLLM's worker calls ``profiler.step()`` at the top of every ``execute_model``
and starts recording inside the call whose 1-based count equals ``delay_iterations``
(``delay_iterations=0`` starts at ``start_profile`` time, so it records the same steps as 1).
It stops at the top of step ``delay + max`` (1-based), so exactly ``max_iterations`` steps are
recorded. profwin's window counts steps from 0, so step ``s`` is vLLM's step ``s + 1``::

    delay_iterations = window.start + 1
    max_iterations   = window.end - window.start      (0 = no limit, for an open window)

``delay = start`` (what verl sends) records steps ``start-1 .. end-2``: one step early, and for
``start = 1`` that step is the prefill. A window starting at 0 is sent ``delay = 1`` rather than
0 so that, like every other window, the trace begins at the top of its first step and not at the
moment ``start_profile`` was called. integration_tests/vllm proves all of this on a real engine.

A window in tokens is decided inside the engine by profwin-vllm's engine plugin
(:mod:`profwin_vllm.engine_plugin`), which reads ``delay_iterations``/``max_iterations``
encoded by :func:`profwin.plugin.engines.encode_tokens`; it is sent only where the plugin runs. Anywhere
else the plan records the same numbers as steps, and says so in a note (a ``WindowWarning``).

The same bounds drive every profiler kind vLLM has (``options.vllm.profiler``): ``torch``,
``cuda`` (``cudaProfilerStart``/``Stop`` for nsys) and ``proton``. Each version is sent only the
``ProfilerConfig`` fields and ``start_profile`` keywords it has (:mod:`profwin_vllm.versions`):
from 0.16 an unknown key aborts vLLM's launch.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from profwin.plugin import ConfigError, ProfileSpec, Window, checked, engine_flavours, resolve_activities, shown
from profwin.plugin.engines import (
    EnginePlan,
    EngineVersion,
    VersionSource,
    decode_timeline,
    decode_tokens,
    encode_timeline,
    encode_tokens,
)
from profwin.plugin.remote import is_session_prefix
from profwin_vllm.options import VllmOptions, options_of
from profwin_vllm.versions import (
    CONFIG_FIELDS,
    PROFILER_KINDS,
    START_KEYWORDS,
    TOKEN_WINDOWS_FROM,
    Mechanism,
    mechanism,
    missing,
    profiler_kinds,
    reads_env,
    takes_prefix,
)

__all__ = ["check_state", "delay_iterations", "fixed_at_launch", "launched_window", "max_iterations", "plan_for"]

# The activities each platform's worker accepts (vllm/config/profiler.py,
# validate_worker_profiler_config); the CPU platform accepts CPU only.
_PLATFORM_ACTIVITIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"cpu": ("cpu",), "cuda": ("cpu", "cuda"), "rocm": ("cpu", "cuda"), "xpu": ("cpu", "xpu"), "ascend": ("cpu", "npu")}
)
_VLLM_ACTIVITY = MappingProxyType({"cpu": "CPU", "cuda": "CUDA", "xpu": "XPU"})


@checked
def delay_iterations(window: Window) -> int:
    """vLLM's ``delay_iterations`` that makes step ``window.start`` (0-based) the first one recorded."""
    return window.start + 1


@checked
def max_iterations(window: Window) -> int:
    """vLLM's ``max_iterations``: the window's length, or 0 (vLLM's "no limit") when it is open."""
    return 0 if window.length is None else window.length


def launched_window(delay: int, limit: int) -> Window:
    """The session steps a launch config's ``delay_iterations``/``max_iterations`` record (the
    inverse of :func:`delay_iterations` and :func:`max_iterations`; delay 0 records from step 0,
    as 1 does)."""
    start = max(delay, 1) - 1
    return Window(start, None if limit == 0 else start + limit)


def fixed_at_launch(plan: EnginePlan, delay: int, limit: int) -> EnginePlan:
    """``plan`` for an engine whose vLLM takes the window only at launch (< 0.32) and which was
    launched with ``delay_iterations=delay, max_iterations=limit``.

    The launch bounds are the window's: the plan as it is. They record more than the window (an
    engine launched for a wider window, or for every step, vLLM's default): the engine records
    them, and the traces are trimmed to the window afterwards (``records`` says what is
    recorded), with a note. Anything else (steps outside the launch window, a token window)
    cannot be recorded: a :class:`~profwin.ConfigError` saying what to relaunch with.
    """
    window = plan.window
    if (delay, limit) == (plan.details["delay_iterations"], plan.details["max_iterations"]):
        return plan
    bare, flagged = decode_timeline(delay)
    if flagged and isinstance(bare, int):
        delay = bare  # launched with the session timeline: its window is the delay under the flag
    if plan.details["timeline"] and not flagged:
        planned = decode_timeline(plan.details["delay_iterations"])[0]
        plan = plan.replace(
            details={**plan.details, "timeline": False, "delay_iterations": planned},
            notes=(*plan.notes, f"no session timeline: vLLM {plan.version} takes it only at launch, with the window, "
                   "and this engine was launched without it"),
        )  # fmt: skip
        if (delay, limit) == (plan.details["delay_iterations"], plan.details["max_iterations"]):
            return plan
    launched = launched_window(delay, limit)
    holds = launched.start <= window.start and (launched.end is None or (window.end is not None and window.end <= launched.end))
    if window.in_tokens or decode_tokens(delay, limit) is not None or not holds:
        raise ConfigError(
            f"vLLM {plan.version} fixes the window at launch, and this engine was launched with delay_iterations={delay}, "
            f"max_iterations={limit} (engine steps {launched} of each session), which does not hold window {window}: "
            f"relaunch it with delay_iterations={plan.details['delay_iterations']}, "
            f"max_iterations={plan.details['max_iterations']}",
            path="window",
        )
    note = (
        f"vLLM {plan.version} takes the window only at launch, and this engine was launched to record engine steps "
        f"{launched} of each session: profwin records them and trims each trace to window {window}"
    )
    return plan.replace(records=launched, notes=(*plan.notes, note))


def _session_numbers(
    window: Window, version: EngineVersion, prefix: str, timeline: bool = False
) -> tuple[int, int, dict[str, Any]]:
    """``delay_iterations``, ``max_iterations`` and ``LLM.start_profile``'s keywords for ``window``
    on ``version``: the per-session request, or just the prefix where the window is fixed at launch.
    ``timeline``: the delay carries profwin's timeline flag (the engine plugin takes it off)."""
    how = mechanism(version)
    # No window on vLLM < 0.12: the whole session, from start_profile on, is what ':' asks for.
    if how is Mechanism.NONE:
        delay, limit = 0, 0
    elif window.in_tokens:
        delay, limit = encode_tokens(window)
    else:
        delay, limit = delay_iterations(window), max_iterations(window)
    if timeline:
        delay = encode_timeline(delay)
    wanted = {"profile_prefix": prefix, "delay_iterations": delay, "max_iterations": limit}
    # Only the keywords this version's start_profile takes (fields.START_KEYWORDS): none before
    # 0.17, the prefix from 0.17, the bounds from 0.32.
    start_kwargs = {k: v for k, v in wanted.items() if not missing([k], START_KEYWORDS, version)}
    return delay, limit, start_kwargs


def _activities(spec: ProfileSpec, options: VllmOptions, version: EngineVersion) -> list[str] | None:
    """vLLM's ``torch_profiler_activities`` for the spec, or ``None`` for the platform default."""
    if spec.activities is None:
        return None
    wanted: tuple[str, ...] = spec.activities
    if options.platform is not None:
        accepted = _PLATFORM_ACTIVITIES[options.platform]
        why = f"vLLM on platform {options.platform!r} accepts only {list(accepted)}"
        wanted, _ = resolve_activities(spec, default=(), unavailable={a: why for a in wanted if a not in accepted})
    if options.platform == "ascend":
        return None  # vllm-ascend records CPU and NPU whatever is configured
    if "npu" in wanted:
        raise ConfigError(
            "vLLM has no 'npu' activity; vllm-ascend records CPU and NPU by itself: "
            "leave activities unset, or set options.vllm.platform: ascend",
            path="activities",
        )
    if missing(["torch_profiler_activities"], CONFIG_FIELDS, version):
        raise ConfigError(
            f"vLLM {version} has no setting for activities (ProfilerConfig.torch_profiler_activities came in "
            f"{CONFIG_FIELDS['torch_profiler_activities']}; before it the worker records its platform's default, "
            "CPU and the accelerator); leave activities unset",
            path="activities",
        )
    return [_VLLM_ACTIVITY[a] for a in wanted]


def _env_flag(value: bool) -> str:
    return "1" if value else "0"


def _legacy_env(spec: ProfileSpec, options: VllmOptions, version: EngineVersion, delay: int, limit: int) -> dict[str, str]:
    """The ``VLLM_TORCH_PROFILER_*`` variables (vLLM 0.5.5 to 0.15; window ones from 0.12)."""
    env = {
        "VLLM_TORCH_PROFILER_DIR": str(spec.output_dir),
        "VLLM_TORCH_PROFILER_WITH_STACK": _env_flag(spec.stack or spec.modules),
        "VLLM_TORCH_PROFILER_RECORD_SHAPES": _env_flag(spec.shapes),
        "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY": _env_flag(spec.memory),
        "VLLM_TORCH_PROFILER_WITH_FLOPS": _env_flag(spec.flops),
    }
    if version >= "0.12":
        env |= {
            "VLLM_PROFILER_DELAY_ITERS": str(delay),
            "VLLM_PROFILER_MAX_ITERS": str(limit),
            "VLLM_TORCH_PROFILER_DISABLE_ASYNC_LLM": _env_flag(not options.frontend),
            "VLLM_TORCH_PROFILER_USE_GZIP": _env_flag(options.gzip),
        }
    return env


def _check_window_supported(window: Window, version: EngineVersion, options: VllmOptions) -> None:
    whole = window.start == 0 and window.end is None
    if whole:
        return
    if mechanism(version) is Mechanism.NONE:
        raise ConfigError(
            f"vLLM {version} cannot record a window of steps: delay/max iterations came in 0.12. "
            f"Upgrade vLLM, or profile the whole session with window ':' (got {window})",
            path="window",
        )
    if mechanism(version) is Mechanism.ENV and options.platform == "cpu":
        raise ConfigError(
            f"vLLM {version} on CPU ignores VLLM_PROFILER_DELAY_ITERS/MAX_ITERS (its CPU worker built its own "
            f"profiler until 0.13). Use vLLM >= 0.13, or profile the whole session with window ':' (got {window})",
            path="window",
        )


# What a spec may ask of a profiler other than torch: these are torch.profiler settings. vLLM's
# 'cuda' profiler only opens and closes nsys's capture range (nsys decides what is recorded), and
# 'proton' records Triton Proton's own data.
_TORCH_ONLY: tuple[tuple[str, str], ...] = (
    ("activities", "activities"),
    ("stack", "stack"),
    ("modules", "modules"),
    ("shapes", "shapes"),
    ("memory", "memory"),
    ("flops", "flops"),
)
# The platforms whose vLLM workers accept a kind other than torch (validate_worker_profiler_config:
# only CUDA devices, ROCm included, take 'cuda' and 'proton').
_NON_TORCH_PLATFORMS = (None, "cuda", "rocm")


def _check_kind(spec: ProfileSpec, options: VllmOptions, version: EngineVersion) -> str:
    """The profiler kind (``options.vllm.profiler``) after checking that ``version`` has it, the
    platform takes it and the spec asks nothing of it that only torch records."""
    kind = options.profiler
    if options.proton_data is not None and kind != "proton":
        raise ConfigError(f"is for profiler 'proton' (options.vllm.profiler is {kind!r})", path="options.vllm.proton_data")
    if kind == "torch":
        return kind
    if kind not in profiler_kinds(version):
        first = PROFILER_KINDS[kind]
        raise ConfigError(
            f"vLLM {version} has no {kind!r} profiler (ProfilerConfig.profiler {kind!r} came in {first}); "
            f"use vLLM >= {first} or profiler 'torch'",
            path="options.vllm.profiler",
        )
    if options.platform not in _NON_TORCH_PLATFORMS:
        raise ConfigError(
            f"vLLM on platform {options.platform!r} runs only the 'torch' profiler ({kind!r} needs a CUDA device)",
            path="options.vllm.profiler",
        )
    for attribute, path in _TORCH_ONLY:
        value = getattr(spec, attribute)
        if value not in (None, False):
            raise ConfigError(
                f"is a torch.profiler setting, which vLLM's {kind!r} profiler does not take "
                f"(got {shown(value)} with options.vllm.profiler {kind!r}); leave it unset",
                path=path,
            )
    if options.frontend:
        raise ConfigError(
            f"the AsyncLLM frontend profiler runs only with profiler 'torch' (got {shown(kind)})", path="options.vllm.frontend"
        )
    return kind


def _torch_fields(spec: ProfileSpec, options: VllmOptions, activities: list[str] | None) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "torch_profiler_dir": str(spec.output_dir),
        # vLLM records stacks unless told otherwise: always send the spec's choice.
        "torch_profiler_with_stack": spec.stack or spec.modules,
        "torch_profiler_record_shapes": spec.shapes,
        "torch_profiler_with_memory": spec.memory,
        "torch_profiler_with_flops": spec.flops,
        "torch_profiler_use_gzip": options.gzip,
        "ignore_frontend": not options.frontend,
    }
    if activities is not None:
        fields["torch_profiler_activities"] = activities
    return fields


def _cuda_fields(spec: ProfileSpec, options: VllmOptions, activities: list[str] | None) -> dict[str, Any]:
    return {}  # nsys writes the report: vLLM only needs the kind and the bounds


def _proton_fields(spec: ProfileSpec, options: VllmOptions, activities: list[str] | None) -> dict[str, Any]:
    fields: dict[str, Any] = {"proton_profiler_dir": str(spec.output_dir)}
    if options.proton_data is not None:
        fields["proton_data"] = options.proton_data
    return fields


_KIND_FIELDS = MappingProxyType({"torch": _torch_fields, "cuda": _cuda_fields, "proton": _proton_fields})
"""profiler kind -> the ``ProfilerConfig`` fields of that kind, from the spec."""


def _launch_config(
    spec: ProfileSpec,
    options: VllmOptions,
    version: EngineVersion,
    *,
    kind: str,
    activities: list[str] | None,
    bounds: tuple[int, int],
) -> dict[str, Any]:
    """vLLM ``version``'s ``profiler_config`` for ``spec``: the kind's fields and the bounds.

    Every key is checked against :data:`profwin_vllm.versions.CONFIG_FIELDS`: a field the version
    lacks is never sent (from 0.16 vLLM aborts its launch on an unknown key).
    """
    config: dict[str, Any] = {
        "profiler": kind,
        **_KIND_FIELDS[kind](spec, options, activities),
        "delay_iterations": bounds[0],
        "max_iterations": bounds[1],
    }
    absent = missing(config, CONFIG_FIELDS, version)
    if absent:
        raise ConfigError(
            f"vLLM {version}'s ProfilerConfig has no field(s) {sorted(absent)} (they came in "
            f"{', '.join(sorted(set(absent.values())))}): profwin sends a version only the fields it has",
            path="options.vllm",
        )
    return config


def _check_ascend(spec: ProfileSpec, version: EngineVersion) -> None:
    """Ask the installed hardware plugins (profwin-npu) what vllm-ascend does with ``spec``.

    They warn once for each option vllm-ascend ignores; a window it cannot honour is an error.
    Without such a plugin nothing is known beyond vLLM's own rules.
    """
    for flavour in engine_flavours("vllm-ascend", str(version), spec):
        if not flavour.get("honours_window", True) and (spec.window.start > 0 or spec.window.end is not None):
            raise ConfigError(
                f"{flavour['ignored']['window']}; profile the whole session with window ':' or upgrade vllm-ascend",
                path="window",
            )


_ENGINE_PLUGIN = "profwin-vllm in vLLM's environment (its vllm.general_plugins entry point), loaded when the engine starts"


def token_fallback(window: Window, why: str) -> str:
    """The note of a token window recorded in steps."""
    return (
        f"the trace is in steps: window {window} is recorded as engine steps {window.in_steps()} of the session, "
        f"because {why}; a token window needs {_ENGINE_PLUGIN}"
    )


def _token_plan(window: Window, version: EngineVersion, plugin: bool | None, inactive: str) -> tuple[Window, list[str]]:
    """The window to map and the notes: a token window stays in tokens where the engine plugin
    runs (``plugin``: it answered; ``None``: not asked, as for ``profwin args``); else its steps."""
    if not window.in_tokens:
        return window, []
    if mechanism(version) in (Mechanism.NONE, Mechanism.ENV):
        return window.in_steps(), [token_fallback(window, f"vLLM {version} takes no profiler_config")]
    if plugin is False or (plugin is None and version < TOKEN_WINDOWS_FROM):
        why = inactive or f"vLLM {version} does not report profwin-vllm's engine plugin"
        if version < TOKEN_WINDOWS_FROM:
            why = f"vLLM {version} is older than {TOKEN_WINDOWS_FROM}, the oldest the engine plugin is proven on"
        return window.in_steps(), [token_fallback(window, why)]
    return window, []


def _timeline_plan(
    spec: ProfileSpec, version: EngineVersion, kind: str, plugin: bool | None, inactive: str
) -> tuple[bool, list[str]]:
    """Whether the session timeline is asked of the engine (``record: [timeline]``), and the note
    that says why not: it needs profwin-vllm's engine plugin (``plugin``: the workers reported it
    records timelines; ``None``: not asked, assumed from the version) and a folder to write in."""
    if not spec.timeline:
        return False, []
    why = ""
    if mechanism(version) in (Mechanism.NONE, Mechanism.ENV):
        why = f"vLLM {version} takes no profiler_config"
    elif kind == "cuda":
        why = "vLLM's 'cuda' profiler writes no file, so the worker has no folder for it"
    elif version < TOKEN_WINDOWS_FROM:
        why = f"vLLM {version} is older than {TOKEN_WINDOWS_FROM}, the oldest the engine plugin is proven on"
    elif plugin is False:
        why = inactive or "the engine's workers do not report that profwin-vllm's engine plugin records timelines"
    if why:
        return False, [f"no session timeline is recorded: {why}; the timeline needs {_ENGINE_PLUGIN}"]
    return True, []


@checked
def plan_for(
    spec: ProfileSpec,
    version: EngineVersion,
    source: VersionSource = "given",
    *,
    plugin: bool | None = None,
    inactive: str = "",
    timeline_plugin: bool | None = None,
) -> EnginePlan:
    """What vLLM ``version`` is sent to record exactly ``spec.window``.

    A token window needs profwin-vllm's engine plugin in the engine: ``plugin`` says whether the
    engine reported it (``None``: nobody asked; the plan assumes it and ``fallback`` says what
    happens without it), ``inactive`` why not, when known. The session timeline
    (``record: [timeline]``) needs it too: ``timeline_plugin`` says whether every worker reported
    that it records them (``None``: not asked); where it does not, the window is recorded without
    one, and a note says why.

    Raises :class:`~profwin.ConfigError` when the version cannot honour the spec: a window on
    vLLM < 0.12, an activity the platform rejects, an unknown ``options.vllm`` key.
    """
    options = options_of(spec)
    window, token_notes = _token_plan(spec.window, version, plugin, inactive)
    spec = spec.replace(window=window)
    _check_window_supported(window, version, options)
    if options.platform == "ascend":
        _check_ascend(spec, version)
    kind = _check_kind(spec, options, version)
    activities = _activities(spec, options, version)
    how = mechanism(version)
    timeline, timeline_notes = _timeline_plan(spec, version, kind, timeline_plugin, inactive)
    delay, limit, start_kwargs = _session_numbers(window, version, spec.prefix, timeline)

    launch: dict[str, Any] = {}
    if version >= "0.13":
        launch["profiler_config"] = _launch_config(
            spec, options, version, kind=kind, activities=activities, bounds=(delay, limit)
        )
    env = _legacy_env(spec, options, version, delay, limit) if reads_env(version) and not launch else {}

    notes = token_notes + timeline_notes
    if options.frontend:
        notes.append("the AsyncLLM frontend also writes a trace of the whole session (options.vllm.frontend)")
    if kind == "cuda":
        notes.append(
            "vLLM's 'cuda' profiler calls cudaProfilerStart/Stop at the window's edges and writes no file: run the "
            "engine under `nsys profile --capture-range=cudaProfilerApi --capture-range-end=repeat "
            "--trace-fork-before-exec=true -o REPORT`; nsys writes REPORT.N.nsys-rep, one per session, when the "
            "engine exits"
        )
    return EnginePlan(
        engine="vllm",
        version=str(version),
        version_source=source,
        mechanism=how.value,
        window=window,
        # A token window's steps are decided in the engine: unknown until the trace says.
        records=None if window.in_tokens else window,
        output_dir=spec.output_dir,
        launch=launch,
        env=env,
        request=start_kwargs if how is Mechanism.PER_SESSION else None,
        per_session=how is Mechanism.PER_SESSION,
        server_requirement=_ENGINE_PLUGIN if window.in_tokens else None,
        fallback=token_fallback(window, "the engine does not report the plugin") if window.in_tokens else None,
        notes=tuple(notes),
        details={
            "delay_iterations": delay,
            "max_iterations": limit,
            "takes_prefix": takes_prefix(version),
            # LLM.start_profile's keywords: the request, or just the prefix where the window is fixed at launch
            "start_kwargs": start_kwargs,
            "ranks": spec.ranks if spec.ranks == "all" else list(spec.ranks),
            # the engine plugin's error count before the start (a target sets it; the stop reports the new ones)
            "plugin_errors": None,
            # the delay carries the session timeline's flag (the engine plugin records one)
            "timeline": timeline,
        },
    )


_DETAILS = ("delay_iterations", "max_iterations", "takes_prefix", "start_kwargs", "ranks", "plugin_errors", "timeline")


def check_state(plan: EnginePlan, spec: ProfileSpec) -> None:
    """Refuse a plan read back from a state file (untrusted) that :func:`plan_for` could not have
    made for this session: its numbers must be the window's on its version, its prefix the
    session's (what the stop's collect matches files with), its ranks a list of ranks.

    Raises :class:`~profwin.ConfigError` with the path of the first field that is wrong.
    """
    details = plan.details
    if sorted(details) != sorted(_DETAILS):
        raise ConfigError(f"must hold exactly {list(_DETAILS)} (got {shown(sorted(details))})", path="details")
    try:
        version = EngineVersion.parse(plan.version)
    except ConfigError as exc:
        raise exc.at("version") from None
    kwargs = details["start_kwargs"]
    prefix = kwargs.get("profile_prefix") if isinstance(kwargs, Mapping) else None
    if version >= "0.17" and not is_session_prefix(prefix, spec):
        raise ConfigError(
            f"must be this session's prefix {spec.prefix!r} (or {spec.prefix}-N; got {shown(prefix)})",
            path="details.start_kwargs.profile_prefix",
        )
    if type(details["timeline"]) is not bool:
        raise ConfigError(f"must be true or false (got {shown(details['timeline'])})", path="details.timeline")
    delay, limit, expected_kwargs = _session_numbers(plan.window, version, str(prefix), details["timeline"])
    expected = {
        "delay_iterations": delay,
        "max_iterations": limit,
        "takes_prefix": takes_prefix(version),
        "start_kwargs": expected_kwargs,
    }
    for key, value in expected.items():
        if type(details[key]) is not type(value) or details[key] != value:
            raise ConfigError(
                f"must be {value!r} for window {plan.window} on vLLM {version} (got {shown(details[key])})", path=f"details.{key}"
            )
    request = None if plan.request is None else dict(plan.request)
    if request != (expected_kwargs if mechanism(version) is Mechanism.PER_SESSION else None):
        raise ConfigError(f"must be the start keywords {expected_kwargs!r} (got {shown(request)})", path="request")
    try:
        spec.replace(ranks=details["ranks"])  # the spec's own rule for ranks
    except ConfigError as exc:
        raise exc.at("details") from None
    errors = details["plugin_errors"]
    if not (errors is None or (type(errors) is int and 0 <= errors < 1 << 62)):
        raise ConfigError(f"must be a count of errors or null (got {shown(errors)})", path="details.plugin_errors")
    records, window = plan.records, plan.window
    if (
        records is not None
        and records != window
        and not (
            records.start <= window.start and (records.end is None or (window.end is not None and window.end <= records.end))
        )
    ):
        raise ConfigError(f"must hold window {window} (got {records})", path="records")
