"""Spec -> SGLang ``ProfileReq`` fields and launch environment (pure functions, no sglang import).

SGLang drops activity names it does not know without a word, and ``with_stack``/``record_shapes``
default to *on* in 0.5.23 when left out, so profwin validates every activity name before sending
and always sends both booleans.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from profwin import engine_flavours
from profwin.errors import ConfigError, unknown_key
from profwin.spec import ProfileSpec
from profwin_sglang.plan import START_MODES, Plan

__all__ = [
    "SGLANG_ACTIVITIES",
    "SglangOptions",
    "activities_for",
    "launch_env",
    "new_profile_id",
    "options_of",
    "profile_request",
]

SGLANG_ACTIVITIES: tuple[str, ...] = ("CPU", "GPU", "XPU", "MEM", "CUDA_PROFILER", "RPD")
"""Every activity name SGLang 0.5.23's profiler recognises (others are silently dropped there)."""

# profwin activity -> SGLang activity. On Ascend SGLang patches ProfilerActivity.CUDA to NPU, so
# "GPU" is what records the NPU there.
_ACTIVITY = {"cpu": "CPU", "cuda": "GPU", "npu": "GPU", "xpu": "XPU"}
# server device -> the profwin activity that records its accelerator
_ACCELERATOR = {"cuda": "cuda", "musa": "cuda", "rocm": "cuda", "hip": "cuda", "npu": "npu", "xpu": "xpu"}
_OPTION_KEYS = ("start", "by_stage", "merge_profiles", "cuda_profiler", "detailed_annotations", "activities")


@frozen(kw_only=True)
class SglangOptions:
    """The ``options.sglang`` block of a spec.

    Attributes:
        start: ``auto`` (default), ``relative`` (require the server plugin) or ``trim``; see
            :mod:`profwin_sglang.plan`.
        by_stage: SGLang's ``profile_by_stage``: the first N prefill and N decode batches, two files.
        merge_profiles: ask rank 0 to merge the per-rank traces into ``merged-{profile_id}``.
        cuda_profiler: also send ``CUDA_PROFILER`` (cudaProfilerStart/Stop for nsys).
        detailed_annotations: SGLang's KV aggregates in the ``step[...]`` span names.
        activities: raw SGLang activity names, replacing the ones derived from the spec.
    """

    start: str = "auto"
    by_stage: bool = False
    merge_profiles: bool = False
    cuda_profiler: bool = False
    detailed_annotations: bool = False
    activities: tuple[str, ...] | None = None


def options_of(spec: ProfileSpec) -> SglangOptions:
    """Validate and read ``spec.options["sglang"]``."""
    raw: Mapping[str, Any] = spec.plugin_options("sglang")
    for key in raw:
        if key not in _OPTION_KEYS:
            raise unknown_key(key, _OPTION_KEYS, path="options.sglang")
    start = raw.get("start", "auto")
    if start not in START_MODES:
        raise ConfigError(f"must be one of {list(START_MODES)} (got {start!r})", path="options.sglang.start")
    flags = {}
    for key in ("by_stage", "merge_profiles", "cuda_profiler", "detailed_annotations"):
        value = raw.get(key, False)
        if not isinstance(value, bool):
            raise ConfigError(f"must be true or false (got {value!r})", path=f"options.sglang.{key}")
        flags[key] = value
    activities = raw.get("activities")
    if activities is not None:
        if isinstance(activities, str) or not isinstance(activities, (list, tuple)) or not activities:
            raise ConfigError(
                f"must be a non-empty list drawn from {list(SGLANG_ACTIVITIES)} (got {activities!r})",
                path="options.sglang.activities",
            )
        for i, name in enumerate(activities):
            if name not in SGLANG_ACTIVITIES:
                raise ConfigError(
                    f"must be one of {list(SGLANG_ACTIVITIES)}; SGLang would silently drop {name!r}",
                    path=f"options.sglang.activities[{i}]",
                )
        activities = tuple(activities)
    return SglangOptions(start=start, activities=activities, **flags)


def activities_for(spec: ProfileSpec, device: str | None) -> tuple[list[str], list[str]]:
    """The SGLang activity names for ``spec`` on a server whose ``--device`` is ``device``.

    Returns ``(activities, dropped)``; ``dropped`` lists what the device cannot record when
    ``spec.on_unavailable == "drop"`` (otherwise that raises :class:`ConfigError`). ``device=None``
    (unknown) trusts the spec.
    """
    options = options_of(spec)
    accelerator = None if device is None else _ACCELERATOR.get(device)
    if accelerator == "npu" or (spec.activities is not None and "npu" in spec.activities):
        # Installed hardware plugins (profwin-npu) warn once for what SGLang on NPU ignores.
        engine_flavours("sglang", None, spec)
    wanted: list[tuple[str, str]] = []  # (what the user asked for, SGLang name)
    if options.activities is not None:
        wanted = [(name, name) for name in options.activities]
    elif spec.activities is None:
        wanted.append(("cpu", "CPU"))
        if accelerator is not None or device is None:
            wanted.append((accelerator or "cuda", _ACTIVITY[accelerator or "cuda"]))
    else:
        wanted = [(name, _ACTIVITY[name]) for name in spec.activities]
    if spec.memory:
        wanted.append(("memory", "MEM"))
    if options.cuda_profiler:
        wanted.append(("cuda_profiler", "CUDA_PROFILER"))

    kept: list[str] = []
    dropped: list[str] = []
    for asked, name in wanted:
        reason = None if device is None else _unavailable(asked, name, device, accelerator)
        if reason is None:
            if name not in kept:
                kept.append(name)
        elif spec.on_unavailable == "drop":
            dropped.append(f"{asked} ({reason})")
        else:
            raise ConfigError(f"{asked!r} cannot be recorded: {reason}", path="activities")
    if not kept:
        raise ConfigError(f"nothing left to record on a {device} server after dropping {dropped}", path="activities")
    return kept, dropped


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


def new_profile_id() -> str:
    """A profile id no other session shares: seconds since the epoch plus 8 random hex digits."""
    return f"{int(time.time())}-{uuid.uuid4().hex[:8]}"


def profile_request(spec: ProfileSpec, plan: Plan, *, activities: list[str], profile_id: str) -> dict[str, Any]:
    """The JSON body of ``POST /start_profile`` (and the ``Engine.start_profile`` keywords)."""
    options = options_of(spec)
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


def launch_env(spec: ProfileSpec) -> dict[str, str]:
    """Environment for launching an SGLang server that profwin will drive.

    ``SGLANG_PROFILE_WITH_STACK``/``..._RECORD_SHAPES`` only ever turn recording *off* in SGLang, so
    they are set to false when the spec does not want them (a guard against clients that leave the
    fields out); ``SGLANG_PROFILE_V2`` must stay off because the v2 manager refuses ``start_step``.
    """
    env = {"SGLANG_TORCH_PROFILER_DIR": str(spec.output_dir), "SGLANG_PROFILE_V2": "0"}
    if not spec.stack:
        env["SGLANG_PROFILE_WITH_STACK"] = "false"
    if not spec.shapes:
        env["SGLANG_PROFILE_RECORD_SHAPES"] = "false"
    return env
