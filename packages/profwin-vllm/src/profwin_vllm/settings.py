"""Window and spec -> the settings a given vLLM version takes. Pure functions: no vLLM needed.

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
"""

from __future__ import annotations

import json
import shlex
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from attrs import field, frozen

from profwin import engine_flavours
from profwin.errors import ConfigError, unknown_key
from profwin.spec import ProfileSpec
from profwin.window import Window
from profwin_vllm.versions import Mechanism, VllmVersion

__all__ = [
    "FORMS",
    "OPTION_KEYS",
    "PLATFORMS",
    "VllmOptions",
    "VllmSettings",
    "delay_iterations",
    "max_iterations",
    "render",
    "settings_for",
]

FORMS: tuple[str, ...] = ("serve", "llm", "env", "http")
"""What :func:`render` prints: ``vllm serve`` flags, ``LLM(...)`` keyword, shell exports, HTTP body."""

PLATFORMS: tuple[str, ...] = ("cpu", "cuda", "rocm", "xpu", "ascend")
"""vLLM platforms whose accepted profiler activities profwin knows."""

OPTION_KEYS: tuple[str, ...] = ("frontend", "gzip", "platform")

# The activities each platform's worker accepts (vllm/config/profiler.py,
# validate_worker_profiler_config); the CPU platform accepts CPU only.
_PLATFORM_ACTIVITIES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"cpu": ("cpu",), "cuda": ("cpu", "cuda"), "rocm": ("cpu", "cuda"), "xpu": ("cpu", "xpu"), "ascend": ("cpu", "npu")}
)
_VLLM_ACTIVITY = MappingProxyType({"cpu": "CPU", "cuda": "CUDA", "xpu": "XPU"})


def delay_iterations(window: Window) -> int:
    """vLLM's ``delay_iterations`` that makes step ``window.start`` (0-based) the first one recorded."""
    return window.start + 1


def max_iterations(window: Window) -> int:
    """vLLM's ``max_iterations``: the window's length, or 0 (vLLM's "no limit") when it is open."""
    return 0 if window.length is None else window.length


@frozen(kw_only=True)
class VllmOptions:
    """``options.vllm`` of a spec.

    Attributes:
        frontend: also run the AsyncLLM (API-server) CPU profiler. Off by default because that
            profiler ignores ``delay_iterations``/``max_iterations`` and records the whole
            session, which is the trace a window exists to avoid (vLLM PR #28987).
        gzip: write ``.pt.trace.json.gz`` (vLLM's default) rather than plain JSON.
        platform: the engine's platform (``cpu``, ``cuda``, ``rocm``, ``xpu``, ``ascend``), when
            known, to check activities before launch; ``None`` lets vLLM check at worker start.
    """

    frontend: bool = False
    gzip: bool = True
    platform: str | None = None

    @classmethod
    def from_spec(cls, spec: ProfileSpec) -> VllmOptions:
        options = spec.plugin_options("vllm")
        for key in options:
            if key not in OPTION_KEYS:
                raise unknown_key(key, OPTION_KEYS, path="options.vllm")
        for key in ("frontend", "gzip"):
            if key in options and not isinstance(options[key], bool):
                raise ConfigError(f"must be true or false (got {options[key]!r})", path=f"options.vllm.{key}")
        platform = options.get("platform")
        if platform is not None and platform not in PLATFORMS:
            raise ConfigError(f"must be one of {list(PLATFORMS)} (got {platform!r})", path="options.vllm.platform")
        return cls(
            frontend=options.get("frontend", False),
            gzip=options.get("gzip", True),
            platform=platform,
        )


@frozen(kw_only=True)
class VllmSettings:
    """Everything one vLLM version is sent for one spec.

    Attributes:
        version: the vLLM version planned for.
        mechanism: how that version takes the window.
        window: the steps recorded, counted from the session start.
        delay_iterations, max_iterations: vLLM's numbers for the window (see the module docstring).
        profiler_config: ``profiler_config`` for ``LLM(...)``/``--profiler-config`` (vLLM ≥ 0.13),
            else ``None``.
        env: environment variables for the engine process (vLLM < 0.16 reads them; 0.12 needs them).
        start_kwargs: keyword arguments for ``LLM.start_profile``/``AsyncLLM.start_profile``.
        http_body: the JSON body of ``POST /start_profile`` (``None``: send no body).
        frontend_trace: whether the AsyncLLM frontend also writes a (whole-session) trace.
    """

    version: VllmVersion
    mechanism: Mechanism
    window: Window
    delay_iterations: int
    max_iterations: int
    profiler_config: Mapping[str, Any] | None
    env: Mapping[str, str] = field(factory=dict)
    start_kwargs: Mapping[str, Any] = field(factory=dict)
    http_body: Mapping[str, Any] | None = None
    frontend_trace: bool = False

    @property
    def per_session(self) -> bool:
        """Whether each ``start_profile`` carries its own window (vLLM ≥ 0.32)."""
        return self.mechanism is Mechanism.PER_SESSION


def _activities(spec: ProfileSpec, options: VllmOptions, version: VllmVersion) -> list[str] | None:
    """vLLM's ``torch_profiler_activities`` for the spec, or ``None`` for the platform default."""
    if spec.activities is None:
        return None
    wanted = list(spec.activities)
    if options.platform is not None:
        accepted = _PLATFORM_ACTIVITIES[options.platform]
        kept = []
        for activity in wanted:
            if activity in accepted:
                kept.append(activity)
                continue
            why = f"vLLM on platform {options.platform!r} accepts only {list(accepted)}"
            if spec.on_unavailable == "error":
                raise ConfigError(
                    f"{activity!r} cannot be recorded: {why}; remove it or set on_unavailable: drop", path="activities"
                )
            warnings.warn(f"profwin: dropping activity {activity!r}: {why}", stacklevel=4)
        if not kept:
            raise ConfigError(f"none of {wanted} can be recorded on platform {options.platform!r}", path="activities")
        wanted = kept
    if options.platform == "ascend":
        return None  # vllm-ascend records CPU and NPU whatever is configured
    if "npu" in wanted:
        raise ConfigError(
            "vLLM has no 'npu' activity; vllm-ascend records CPU and NPU by itself: "
            "leave activities unset, or set options.vllm.platform: ascend",
            path="activities",
        )
    if version.mechanism in (Mechanism.NONE, Mechanism.ENV):
        raise ConfigError(
            f"vLLM {version} has no setting for activities (torch_profiler_activities came with "
            "profiler_config in 0.13); leave activities unset",
            path="activities",
        )
    return [_VLLM_ACTIVITY[a] for a in wanted]


def _env_flag(value: bool) -> str:
    return "1" if value else "0"


def _legacy_env(spec: ProfileSpec, options: VllmOptions, version: VllmVersion, window: Window) -> dict[str, str]:
    """The ``VLLM_TORCH_PROFILER_*`` variables (vLLM 0.5.5 to 0.15; window ones from 0.12)."""
    env = {
        "VLLM_TORCH_PROFILER_DIR": str(spec.output_dir),
        "VLLM_TORCH_PROFILER_WITH_STACK": _env_flag(spec.stack or spec.modules),
        "VLLM_TORCH_PROFILER_RECORD_SHAPES": _env_flag(spec.shapes),
        "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY": _env_flag(spec.memory),
        "VLLM_TORCH_PROFILER_WITH_FLOPS": _env_flag(spec.flops),
    }
    if version >= VllmVersion(0, 12):
        env |= {
            "VLLM_PROFILER_DELAY_ITERS": str(delay_iterations(window)),
            "VLLM_PROFILER_MAX_ITERS": str(max_iterations(window)),
            "VLLM_TORCH_PROFILER_DISABLE_ASYNC_LLM": _env_flag(not options.frontend),
            "VLLM_TORCH_PROFILER_USE_GZIP": _env_flag(options.gzip),
        }
    return env


def _check_window_supported(window: Window, version: VllmVersion, options: VllmOptions) -> None:
    whole = window.start == 0 and window.end is None
    if whole:
        return
    if version.mechanism is Mechanism.NONE:
        raise ConfigError(
            f"vLLM {version} cannot record a window of steps: delay/max iterations came in 0.12. "
            f"Upgrade vLLM, or profile the whole session with window ':' (got {window})",
            path="window",
        )
    if version.mechanism is Mechanism.ENV and options.platform == "cpu":
        raise ConfigError(
            f"vLLM {version} on CPU ignores VLLM_PROFILER_DELAY_ITERS/MAX_ITERS (its CPU worker built its own "
            f"profiler until 0.13). Use vLLM >= 0.13, or profile the whole session with window ':' (got {window})",
            path="window",
        )


def _check_ascend(spec: ProfileSpec, version: VllmVersion) -> None:
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


def settings_for(spec: ProfileSpec, version: VllmVersion) -> VllmSettings:
    """What vLLM ``version`` is sent to record exactly ``spec.window``.

    Raises :class:`ConfigError` when the version cannot honour the spec: a window on vLLM < 0.12,
    an activity the platform rejects, an unknown ``options.vllm`` key.
    """
    options = VllmOptions.from_spec(spec)
    window = spec.window
    _check_window_supported(window, version, options)
    if options.platform == "ascend":
        _check_ascend(spec, version)
    activities = _activities(spec, options, version)
    delay, limit = delay_iterations(window), max_iterations(window)
    mechanism = version.mechanism
    if mechanism is Mechanism.NONE:
        # No window: the whole session, from start_profile on, is what a window ':' asks for.
        delay, limit = 0, 0

    config: dict[str, Any] | None = None
    if version >= VllmVersion(0, 13):
        config = {
            "profiler": "torch",
            "torch_profiler_dir": str(spec.output_dir),
            # vLLM records stacks unless told otherwise: always send the spec's choice.
            "torch_profiler_with_stack": spec.stack or spec.modules,
            "torch_profiler_record_shapes": spec.shapes,
            "torch_profiler_with_memory": spec.memory,
            "torch_profiler_with_flops": spec.flops,
            "torch_profiler_use_gzip": options.gzip,
            "ignore_frontend": not options.frontend,
            "delay_iterations": delay,
            "max_iterations": limit,
        }
        if activities is not None:
            config["torch_profiler_activities"] = activities
    env = _legacy_env(spec, options, version, window) if version.reads_env and config is None else {}

    start_kwargs: dict[str, Any] = {}
    http_body: dict[str, Any] | None = None
    if version >= VllmVersion(0, 17):
        start_kwargs["profile_prefix"] = spec.prefix
    if mechanism is Mechanism.PER_SESSION:
        start_kwargs |= {"delay_iterations": delay, "max_iterations": limit}
        http_body = dict(start_kwargs)
    return VllmSettings(
        version=version,
        mechanism=mechanism,
        window=window,
        delay_iterations=delay,
        max_iterations=limit,
        profiler_config=None if config is None else MappingProxyType(config),
        env=MappingProxyType(env),
        start_kwargs=MappingProxyType(start_kwargs),
        http_body=None if http_body is None else MappingProxyType(http_body),
        frontend_trace=options.frontend,
    )


# -- text to paste --------------------------------------------------------------------------------


def _python_literal(value: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in value.items()) + "}"


def _json(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), separators=(",", ":"))


def render(settings: VllmSettings, form: str | None = None) -> str:
    """The settings as text to paste: ``serve`` flags, an ``llm`` keyword, ``env`` exports or
    the ``http`` body of ``/start_profile``. Comment lines say what each piece does."""
    form = form or FORMS[0]
    if form not in FORMS:
        raise ConfigError(f"must be one of {list(FORMS)} (got {form!r})", path="form")
    version = settings.version
    if form == "env":
        return _render_env(settings)
    if settings.profiler_config is None:
        raise ConfigError(
            f"vLLM {version} has no profiler_config (it came in 0.13) and takes the profiler settings "
            "from environment variables: use the 'env' form",
            path="form",
        )
    window_note = f"# records engine steps {_steps_text(settings.window)} of each profiling session"
    if form == "http":
        if settings.http_body is None:
            raise ConfigError(
                f"vLLM {version} takes no window in POST /start_profile (per-session bounds came in 0.32); "
                "the window is the launch config's: use the 'serve' form",
                path="form",
            )
        return _json(settings.http_body)
    if form == "serve":
        lines = [f"--profiler-config {shlex.quote(_json(settings.profiler_config))}", window_note]
        if settings.per_session:
            lines.append(
                "# per session (vLLM >= 0.32): curl -X POST <url>/start_profile -H 'Content-Type: application/json' "
                f"-d {shlex.quote(_json(settings.http_body or {}))}"
            )
        else:
            lines.append(f"# vLLM {version}: the window is fixed at launch; POST /start_profile starts it")
        return "\n".join(lines)
    call = ", ".join(f"{k}={v!r}" for k, v in settings.start_kwargs.items())
    lines = [f"profiler_config={_python_literal(settings.profiler_config)}", window_note, f"# then: llm.start_profile({call})"]
    if not settings.per_session:
        lines.append(f"# vLLM {version}: the window is fixed at launch")
    return "\n".join(lines)


def _render_env(settings: VllmSettings) -> str:
    version = settings.version
    if not version.reads_env:
        raise ConfigError(
            f"vLLM {version} ignores the VLLM_TORCH_PROFILER_* variables (removed in 0.16): use the 'serve' or 'llm' form",
            path="form",
        )
    env = settings.env
    lines = []
    if not env:
        # 0.13–0.15 still read the variables, with a deprecation warning.
        assert settings.profiler_config is not None
        lines.append(f"# vLLM {version}: deprecated since 0.13; prefer --profiler-config")
        env = _env_from_config(settings)
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    if settings.mechanism is Mechanism.NONE:
        lines.append(f"# vLLM {version}: no window; records from start_profile to stop_profile")
    else:
        lines.append(f"# records engine steps {_steps_text(settings.window)} of each profiling session")
    return "\n".join(lines)


def _env_from_config(settings: VllmSettings) -> dict[str, str]:
    config = settings.profiler_config
    assert config is not None
    return {
        "VLLM_TORCH_PROFILER_DIR": str(config["torch_profiler_dir"]),
        "VLLM_TORCH_PROFILER_WITH_STACK": _env_flag(config["torch_profiler_with_stack"]),
        "VLLM_TORCH_PROFILER_RECORD_SHAPES": _env_flag(config["torch_profiler_record_shapes"]),
        "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY": _env_flag(config["torch_profiler_with_memory"]),
        "VLLM_TORCH_PROFILER_WITH_FLOPS": _env_flag(config["torch_profiler_with_flops"]),
        "VLLM_PROFILER_DELAY_ITERS": str(settings.delay_iterations),
        "VLLM_PROFILER_MAX_ITERS": str(settings.max_iterations),
        "VLLM_TORCH_PROFILER_DISABLE_ASYNC_LLM": _env_flag(config["ignore_frontend"]),
        "VLLM_TORCH_PROFILER_USE_GZIP": _env_flag(config["torch_profiler_use_gzip"]),
    }


def _steps_text(window: Window) -> str:
    last = "the end" if window.last is None else str(window.last)
    return f"{window.start}..{last} (0-based)"
