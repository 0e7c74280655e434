"""verl's engine-argument builders, exact: the same signatures and return shapes as verl 0.9.1's
``build_vllm_profiler_args``/``build_sglang_profiler_args``, with the window's numbers taken from
the engine's plan (``profwin.backend(engine).plan``), so the engine records exactly steps
``profile_token_start .. profile_token_end - 1`` of each session.

Every other key is what verl sends, read from the same fields. Where the engine records more than
the window (SGLang without profwin's server plugin), the builder arms the trim that
:func:`profwin_verl.relocate_rollout_traces` applies after ``stop_profile``.
"""

from __future__ import annotations

import json
import os
import warnings
from importlib.metadata import entry_points
from typing import Any

from profwin.plugin import EnginePlan, PluginError, ProfileSpec, Window, backend
from profwin_verl.rollout import expect_trim, read, rollout_trace_dir

__all__ = ["build_sglang_profiler_args", "build_vllm_profiler_args", "engine_plan", "sglang_plugin_installed"]

_INSTALL = {"vllm": "profwin-vllm", "sglang": "profwin-sglang"}


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
    plan = engine_plan("vllm", tool_config, save_path, stack=with_stack, shapes=record_shapes, memory=with_memory)
    if legacy_env:
        verl_env = {
            "VLLM_TORCH_PROFILER_DIR": save_path,
            "VLLM_TORCH_PROFILER_WITH_STACK": "1" if with_stack else "0",
            "VLLM_TORCH_PROFILER_RECORD_SHAPES": "1" if record_shapes else "0",
            "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY": "1" if with_memory else "0",
        }
        os.environ.update({**plan.env, **verl_env})
    launch = dict(plan.launch.get("profiler_config") or {})
    _arm_trim(plan, save_path)
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


def build_sglang_profiler_args(profiler_config: Any, tool_config: Any, rank: int) -> dict[str, Any]:
    """Keyword arguments for SGLang's ``TokenizerManager.start_profile``, as verl builds them, with
    ``start_step``/``num_steps`` from profwin's SGLang plan (relative to this session with
    profwin's server plugin; otherwise recorded from the start and trimmed after the stop)."""
    if not _usable(profiler_config, tool_config):
        return {}
    contents = list(read(tool_config, "contents") or [])
    if "memory" in contents:
        warnings.warn("SGLang profiler does not support memory profiling. Ignoring memory content.", stacklevel=2)
    with_stack = "stack" in contents or "module" in contents
    record_shapes = "shapes" in contents
    save_path = rollout_trace_dir(profiler_config, rank)
    plan = engine_plan("sglang", tool_config, save_path, stack=with_stack, shapes=record_shapes, memory=False)
    request = plan.request or {}
    _arm_trim(plan, save_path)
    return {
        "output_dir": save_path,
        "with_stack": with_stack,
        "record_shapes": record_shapes,
        "start_step": request.get("start_step"),
        "num_steps": request.get("num_steps"),
    }


def engine_plan(engine: str, tool_config: Any, save_path: str, *, stack: bool, shapes: bool, memory: bool) -> EnginePlan:
    """profwin's plan for ``engine`` (the installed version, else the newest profwin knows) for
    verl's tool block: its token window, what verl records, and the trace directory. SGLang's
    relative window needs profwin's server plugin where the scheduler runs, which for verl is this
    process's environment: without it the plan records from the start and is trimmed afterwards."""
    bounds = {key: read(tool_config, key) for key in ("profile_token_start", "profile_token_end")}
    window = Window.from_mapping({key: value for key, value in bounds.items() if value is not None})
    options = {} if engine != "sglang" or sglang_plugin_installed() else {"sglang": {"start": "trim"}}
    spec = ProfileSpec(window=window, stack=stack, shapes=shapes, memory=memory, output_dir=save_path, options=options)
    try:
        return backend(engine).plan(spec, version=None)
    except PluginError as exc:
        raise PluginError(
            f"profwin_verl needs the {engine} backend for verl's {engine} rollout: pip install {_INSTALL[engine]} ({exc})"
        ) from None


def sglang_plugin_installed() -> bool:
    """Whether SGLang processes started from this environment load profwin-sglang's server plugin
    (its ``sglang.srt.plugins`` entry point, unless ``SGLANG_PLUGINS`` leaves it out)."""
    allowed = {name.strip() for name in os.environ.get("SGLANG_PLUGINS", "").split(",") if name.strip()}
    for entry in entry_points(group="sglang.srt.plugins"):
        if entry.dist is not None and entry.dist.name == _INSTALL["sglang"] and (not allowed or entry.name in allowed):
            return True
    return False


def _usable(profiler_config: Any, tool_config: Any) -> bool:
    """verl's guard: no profiler config, no tool config, or a tool without ``contents`` builds nothing."""
    if not profiler_config or not tool_config:
        return False
    return ("contents" in tool_config) if isinstance(tool_config, dict) else hasattr(tool_config, "contents")


def _arm_trim(plan: EnginePlan, trace_dir: str) -> None:
    """Cut this session's traces to the window after the stop when the engine records more."""
    window, records = plan.window, plan.records
    if records == window:
        expect_trim(trace_dir, None)
        return
    offset = 0 if records is None else records.start
    expect_trim(trace_dir, Window(window.start - offset, None if window.end is None else window.end - offset))
