"""What the engine backends must send when the rollout engine runs on Ascend NPUs.

vllm-ascend and SGLang-on-NPU own their torch_npu profiler and hard-code most of its settings,
so several things a user can put in a spec never reach them. :func:`engine_flavour` returns, as
plain data, what such an engine does with a spec and warns once for every option it would
silently ignore. Backends reach it without importing this package, through the entry point
``profwin.engine_flavours: npu`` (see ``docs/backends/npu.md``).

Facts (checked against the engines' code, see the reference notes):

* vllm-ascend: ``torch_npu.profiler.profile`` with activities CPU+NPU, ``with_stack=False``;
  vLLM's ``torch_profiler_with_stack`` becomes ``with_modules``; ``record_shapes`` and
  ``with_flops`` are not forwarded; ``_ExperimentalConfig(profiler_level=Level1,
  aic_metrics=PipeUtilization, export_type=Text, msprof_tx=False, l2_cache=False,
  data_simplification=True)``; no parsing (``analyse`` offline). ``delay_iterations`` and
  ``max_iterations`` are honoured from v0.20.2rc1 (PR #8953) with vLLM's off-by-one; the
  warmup/wait/active schedule is not.
* SGLang on NPU: activities ``CPU``/``GPU``, where ``GPU`` means the NPU; ``MEM`` is ignored;
  ``_ExperimentalConfig(Level1, PipeUtilization, export_type=Text, l2_cache=False,
  data_simplification=False, msprof_tx=False)`` (0.5.23); the folder is parsed at stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profwin.plugin import ConfigError, ProfileSpec, checked, shown, warn
from profwin.plugin.engines import EngineVersion
from profwin_npu.options import npu_options

__all__ = [
    "ENGINES",
    "SGLANG_NPU",
    "VERL_NPU_DEFAULTS",
    "VLLM_ASCEND",
    "VLLM_ASCEND_WINDOW_SINCE",
    "NpuOptionIgnored",
    "engine_flavour",
    "engine_notes",
]

VLLM_ASCEND_WINDOW_SINCE = "0.20.2rc1"
"""First vllm-ascend release whose worker honours ``delay_iterations``/``max_iterations``."""

VLLM_ASCEND: Mapping[str, Any] = {
    "level": "level1",
    "aic_metrics": "PipeUtilization",
    "l2_cache": False,
    "data_simplification": True,
    "export_type": ("text",),
    "analysis": False,
    "mstx": False,
}
"""The Ascend options vllm-ascend hard-codes (``aic_metrics`` was ``AiCoreNone`` before its PR
#10778, 2026-06)."""

SGLANG_NPU: Mapping[str, Any] = {
    "level": "level1",
    "aic_metrics": "PipeUtilization",
    "l2_cache": False,
    "data_simplification": False,
    "export_type": ("text",),
    "analysis": True,
    "mstx": False,
}
"""The Ascend options SGLang 0.5.23 hard-codes on NPU (the folder is parsed at stop)."""

VERL_NPU_DEFAULTS: Mapping[str, Any] = {
    "level": "level0",
    "analysis": False,
    "export_type": ("db",),
    "data_simplification": True,
    "mstx": True,
    "mstx_domain_exclude": ("communication",),
}
"""What verl's training-side NPU profiler uses (``analysis`` is false in ``NPUToolConfig`` and
true in verl's ``profiler.yaml``); verl does not pass ``level``/``analysis`` to rollout engines."""

ENGINES = ("vllm-ascend", "sglang")
_ALIASES = {"vllm": "vllm-ascend", "vllm_ascend": "vllm-ascend", "vllm-ascend": "vllm-ascend", "sglang": "sglang"}
_FIXED = {"vllm-ascend": VLLM_ASCEND, "sglang": SGLANG_NPU}
_SGLANG_ACTIVITY = {"cpu": "CPU", "npu": "GPU"}

_warned: set[tuple[str, str, str]] = set()


class NpuOptionIgnored(UserWarning):
    """An engine on Ascend silently ignores something the spec asks for."""


@checked
def engine_flavour(engine: str, version: str | None, spec: ProfileSpec, *, warn: bool = True) -> dict[str, Any]:
    """What ``engine`` (``vllm-ascend`` or ``sglang``, running on Ascend) does with ``spec``.

    Returns plain data, so a backend needs no type from this package:

    * ``engine``, ``version``: as understood (``vllm`` is read as vllm-ascend, whose releases
      follow vLLM's numbering);
    * ``honours_window``: whether the engine applies the window itself (with the same step rule
      and off-by-one as its GPU build) or records everything between start and stop;
    * ``activities``: the values to send (SGLang: ``["CPU", "GPU"]``-style), or ``None`` where the
      engine fixes them (vllm-ascend always records CPU+NPU: send no activities);
    * ``with_stack``: for vllm-ascend, the value to send as ``torch_profiler_with_stack``, which it
      turns into ``with_modules`` (``spec.stack or spec.modules``); ``None`` for SGLang;
    * ``fixed``: the Ascend options the engine hard-codes;
    * ``ignored``: ``{option: why}`` for what the user set and the engine will not do;
    * ``notes``: one sentence per ignored option (each also warned once per engine and version
      with :class:`NpuOptionIgnored` when ``warn`` is true).

    Raises :class:`profwin.ConfigError` for an unknown engine, an unreadable version, bad
    ``options.npu``, or activities no Ascend machine has.
    """
    name = _ALIASES.get(engine.lower()) if isinstance(engine, str) else None
    if name is None:
        raise ConfigError(f"must be one of {list(ENGINES)} (got {shown(engine)})", path="engine")
    options = npu_options(spec)
    label = f"{name} {version}" if version else f"{name} (version not given)"
    ignored: dict[str, str] = {}
    for key in sorted(options.explicit):
        wanted, fixed = getattr(options, key), _FIXED[name].get(key)
        if wanted != fixed:
            told = f"fixed at {fixed!r}" if fixed is not None else "not supported"
            ignored[f"options.npu.{key}"] = f"{label} ignores options.npu.{key}={_show(wanted)} ({told})"
    honours_window = True
    activities: list[str] | None = None
    with_stack: bool | None = None
    if name == "vllm-ascend":
        honours_window = version is None or EngineVersion.parse(version) >= VLLM_ASCEND_WINDOW_SINCE
        if not honours_window and (spec.window.start > 0 or spec.window.end is not None):
            ignored["window"] = (
                f"{label} ignores the window {spec.window} (delay/max iterations arrived in "
                f"v{VLLM_ASCEND_WINDOW_SINCE}) and records every step between start and stop"
            )
        if spec.activities is not None and set(spec.activities) != {"cpu", "npu"}:
            ignored["activities"] = f"{label} ignores activities {list(spec.activities)} (always records cpu and npu)"
        for field, why in (("shapes", "record_shapes is not forwarded"), ("flops", "with_flops is not forwarded")):
            if getattr(spec, field):
                ignored[field] = f"{label} ignores {field}=true ({why})"
        if spec.stack:
            ignored["stack"] = f"{label} records module hierarchy (with_modules) instead of Python stacks for stack=true"
        with_stack = spec.stack or spec.modules
    else:
        activities = _sglang_activities(spec)
        if spec.memory:
            ignored["memory"] = f"{label} ignores memory=true (the MEM activity does nothing on NPU)"
    if warn:
        _warn_once(name, version, ignored)
    return {
        "engine": name,
        "version": version,
        "honours_window": honours_window,
        "activities": activities,
        "with_stack": with_stack,
        "fixed": dict(_FIXED[name]),
        "ignored": ignored,
        "notes": list(ignored.values()),
    }


@checked
def engine_notes(engine: str, version: str | None, spec: ProfileSpec) -> list[str]:
    """The sentences :func:`engine_flavour` warns with: what ``engine`` ignores in ``spec``."""
    notes: list[str] = engine_flavour(engine, version, spec)["notes"]
    return notes


def _sglang_activities(spec: ProfileSpec) -> list[str]:
    if spec.activities is None:
        return ["CPU", "GPU"]
    for i, activity in enumerate(spec.activities):
        if activity not in _SGLANG_ACTIVITY:
            raise ConfigError(
                f"SGLang on NPU records only 'cpu' and 'npu' (sent as CPU and GPU); got {shown(activity)}",
                path=f"activities[{i}]",
            )
    return [_SGLANG_ACTIVITY[a] for a in spec.activities]


def _warn_once(engine: str, version: str | None, ignored: Mapping[str, str]) -> None:
    for option, message in ignored.items():
        key = (engine, version or "", option)
        if key in _warned:
            continue
        _warned.add(key)
        warn(f"profwin: {message}", NpuOptionIgnored)


def _show(value: object) -> str:
    return repr(list(value)) if isinstance(value, tuple) else repr(value)
