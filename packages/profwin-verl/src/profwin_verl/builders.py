"""verl's engine-argument builders, exact: the same signatures and return shapes as verl 0.9.1's
``build_vllm_profiler_args``/``build_sglang_profiler_args``, with the window's numbers taken from
the engine's plan (``profwin.backend(engine).plan_here``). verl documents ``profile_token_start``
and ``profile_token_end`` as response-token indices, and that is what they mean here wherever the
engine runs profwin's engine-side plugin (profwin-vllm's, profwin-sglang's server plugin): the
engine records the steps that produce those tokens (docs/window.md). Where it does not, the engine
records exactly steps ``profile_token_start .. profile_token_end - 1`` of each session, with a
warning that the trace is in steps.

Every other key is what verl sends, read from the same fields. Where the engine records more than
the window (SGLang without profwin's server plugin), the builder arms the trim that
:func:`profwin_verl.relocate_rollout_traces` applies after ``stop_profile``.

These builders run in the process that launches the engine, before it runs, so what the engine
can do is judged from the engine installed in this process: the SGLang backend's ``plan_here``
sends SGLang's relative ``start_step`` only when the profwin-sglang server plugin can install its
hooks in the SGLang found here, and otherwise records ``0:end`` and trims, with a warning that
says why. With no token window set, both builders return exactly what verl's return.

One key of profwin's own switches the session timeline on (``record: [timeline]``), beside verl's
tool blocks in the role profiler's ``tool_config``, which verl keeps an open mapping::

    actor_rollout_ref.rollout.profiler.tool_config.profwin.timeline: true

(Hydra: ``+actor_rollout_ref.rollout.profiler.tool_config.profwin.timeline=true``). The engine then
writes ``*.timeline.json`` beside its trace in the replica's folder; ``profwin timeline`` reads it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from profwin.plugin import ConfigError, PluginError, ProfileSpec, Window, WindowWarning, backend, checked, shown, warn
from profwin.plugin.engines import EnginePlan
from profwin_verl.traces import expect_trim, read, rollout_trace_dir

__all__ = ["TIMELINE_KEY", "build_sglang_profiler_args", "build_vllm_profiler_args", "engine_plan", "timeline_set", "window_set"]

_INSTALL = {"vllm": "profwin-vllm", "sglang": "profwin-sglang"}


@checked
def build_vllm_profiler_args(profiler_config: Any, tool_config: Any, rank: int, legacy_env: bool = True) -> dict[str, Any]:
    """``{"profiler_config": <JSON>}`` for vLLM's launch arguments (``--profiler-config``), as verl
    builds it, with ``delay_iterations``/``max_iterations`` from profwin's vLLM plan. With
    ``legacy_env`` (vLLM < 0.13) it also exports verl's ``VLLM_TORCH_PROFILER_*`` variables, and
    the plan's other variables (vLLM 0.12 takes the window as ``VLLM_PROFILER_DELAY_ITERS`` /
    ``VLLM_PROFILER_MAX_ITERS``)."""
    if not _usable(profiler_config, tool_config):
        return {}
    contents = list(read(tool_config, "contents") or [])
    with_stack = "stack" in contents or "module" in contents
    record_shapes = "shapes" in contents
    with_memory = "memory" in contents
    save_path = rollout_trace_dir(profiler_config, rank)
    timeline = timeline_set(profiler_config)
    plan = engine_plan(
        "vllm", tool_config, save_path, stack=with_stack, shapes=record_shapes, memory=with_memory, timeline=timeline
    )
    # No window (and no timeline): verl's own values (delay 0 starts at start_profile, as verl does),
    # no extra variables.
    windowed = window_set(tool_config) or plan.details.get("timeline") is True
    if legacy_env:
        verl_env = {
            "VLLM_TORCH_PROFILER_DIR": save_path,
            "VLLM_TORCH_PROFILER_WITH_STACK": "1" if with_stack else "0",
            "VLLM_TORCH_PROFILER_RECORD_SHAPES": "1" if record_shapes else "0",
            "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY": "1" if with_memory else "0",
        }
        os.environ.update({**(plan.env if windowed else {}), **verl_env})
    launch = dict(plan.launch.get("profiler_config") or {}) if windowed else {}
    _arm_trim(plan, save_path)
    for note in plan.notes if windowed else ():
        warn(f"profwin.verl: {note}", WindowWarning)
    config = {
        "profiler": "torch",
        "torch_profiler_dir": save_path,
        "torch_profiler_with_memory": with_memory,
        "torch_profiler_with_stack": with_stack,
        "torch_profiler_record_shapes": record_shapes,
        # vLLM < 0.13 reads no profiler_config (the window then comes from the environment).
        "delay_iterations": launch.get("delay_iterations", 0),
        "max_iterations": launch.get("max_iterations", 0),
        "ignore_frontend": "true",
    }
    return {"profiler_config": json.dumps(config)}


@checked
def build_sglang_profiler_args(profiler_config: Any, tool_config: Any, rank: int) -> dict[str, Any]:
    """Keyword arguments for SGLang's ``TokenizerManager.start_profile``, as verl builds them, with
    ``start_step``/``num_steps`` from profwin's SGLang plan (relative to this session with
    profwin's server plugin; otherwise recorded from the start and trimmed after the stop), in the
    form the SGLang of this process takes: the fields as keywords (0.5.12, verl 0.9.1's pin), or
    ``{"req": ProfileReq(...)}`` (0.5.23, whose ``start_profile`` takes one request object)."""
    if not _usable(profiler_config, tool_config):
        return {}
    contents = list(read(tool_config, "contents") or [])
    if "memory" in contents:
        warn("SGLang profiler does not support memory profiling. Ignoring memory content.")
    with_stack = "stack" in contents or "module" in contents
    record_shapes = "shapes" in contents
    save_path = rollout_trace_dir(profiler_config, rank)
    timeline = timeline_set(profiler_config)
    plan = engine_plan("sglang", tool_config, save_path, stack=with_stack, shapes=record_shapes, memory=False, timeline=timeline)
    windowed = window_set(tool_config) or plan.details.get("timeline") is True
    request = (plan.request or {}) if windowed else {}  # no window: verl's None, None
    _arm_trim(plan, save_path)
    for note in plan.notes if windowed else ():
        warn(f"profwin.verl: {note}", WindowWarning)
    fields = {
        "output_dir": save_path,
        "with_stack": with_stack,
        "record_shapes": record_shapes,
        "start_step": request.get("start_step"),
        "num_steps": request.get("num_steps"),
    }
    # verl calls `await tokenizer_manager.start_profile(**args)`: SGLang 0.5.23 takes one `req`
    # there, not the fields (a TypeError with verl's own builder); the backend knows which.
    as_arguments = getattr(backend("sglang"), "tokenizer_manager_args", None)
    return as_arguments(fields) if callable(as_arguments) else fields


def engine_plan(
    engine: str, tool_config: Any, save_path: str, *, stack: bool, shapes: bool, memory: bool, timeline: bool = False
) -> EnginePlan:
    """profwin's plan for ``engine`` (the installed version, else the newest profwin knows) for
    verl's tool block: its token window, what verl records, and the trace directory. SGLang's
    relative window needs profwin's server plugin where the scheduler runs, which for verl is this
    process's environment: without it the plan records from the start and is trimmed afterwards."""
    bounds = {key: read(tool_config, key) for key in ("profile_token_start", "profile_token_end")}
    window = Window.from_mapping({key: value for key, value in bounds.items() if value is not None})
    spec = ProfileSpec(window=window, stack=stack, shapes=shapes, memory=memory, output_dir=save_path, timeline=timeline)
    try:
        engine_backend = backend(engine)
    except PluginError as exc:
        raise PluginError(
            f"profwin_verl needs the {engine} backend for verl's {engine} rollout: pip install {_INSTALL[engine]} ({exc})"
        ) from None
    # A backend whose engine needs something installed where the engine runs (SGLang's server
    # plugin) judges it from this process, which is where verl launches the engine.
    plan_here = getattr(engine_backend, "plan_here", None)
    plan: EnginePlan = plan_here(spec) if callable(plan_here) else engine_backend.plan(spec, version=None)
    return plan


TIMELINE_KEY = "profwin"
"""The block of a verl role profiler's ``tool_config`` profwin reads beside verl's tool blocks
(verl keeps ``tool_config`` an open mapping): ``tool_config.profwin.timeline: true`` records the
rollout's session timeline beside its window (``record: [timeline]``)."""


def timeline_set(profiler_config: Any) -> bool:
    """Whether verl's role profiler block asks for the session timeline
    (``tool_config.profwin.timeline: true``, the one key; a value that is not a bool is a
    :class:`~profwin.ConfigError` naming it)."""
    value = read(read(read(profiler_config, "tool_config") or {}, TIMELINE_KEY) or {}, "timeline")
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false (got {shown(value)})", path=f"tool_config.{TIMELINE_KEY}.timeline")
    return value


def window_set(tool_config: Any) -> bool:
    """Whether verl's tool block sets a token window (``profile_token_start`` or ``_end``)."""
    return any(read(tool_config, key) is not None for key in ("profile_token_start", "profile_token_end"))


def _usable(profiler_config: Any, tool_config: Any) -> bool:
    """verl's guard: no profiler config, no tool config, or a tool without ``contents`` builds nothing."""
    for path, config in (("profiler_config", profiler_config), ("tool_config", tool_config)):
        try:
            if not config:
                return False
        except Exception:  # a value with no truth of its own (an array): not a config block
            raise ConfigError(f"must be a config block, verl's or a mapping (got {shown(config)})", path=path) from None
    return ("contents" in tool_config) if isinstance(tool_config, dict) else hasattr(tool_config, "contents")


def _arm_trim(plan: EnginePlan, trace_dir: str) -> None:
    """Cut this session's traces to the window after the stop when the engine records more."""
    window, records = plan.window, plan.records
    if records == window or window.in_tokens:  # a token window's steps are the engine's own choice
        expect_trim(trace_dir, None)
        return
    offset = 0 if records is None else records.start
    expect_trim(trace_dir, Window(window.start - offset, None if window.end is None else window.end - offset))
