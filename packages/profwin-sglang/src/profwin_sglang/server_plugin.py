"""The SGLang-side half of profwin-sglang: makes a profiling window relative to the moment the
scheduler receives the request.

SGLang's ``start_step`` is an absolute value of each scheduler's ``forward_ct`` (batches since
launch, never reset, not exposed anywhere), so a client cannot say "the 20th batch from now".
SGLang ≥ 0.5.23 loads *general plugins* in every server process (entry-point group
``sglang.srt.plugins``, see ``sglang/srt/plugins/__init__.py``); installing profwin-sglang beside
SGLang registers :func:`register` there, which installs two hooks in each scheduler process:

* ``SchedulerProfilerManager._init_profile``: a ``start_step`` in
  ``[RELATIVE_BASE, 2 * RELATIVE_BASE)`` means "``start_step - RELATIVE_BASE`` batches after this
  one", and is rewritten to ``forward_ct + 1 + offset`` on the scheduler thread, between batches,
  exactly where SGLang itself reads the counter. Any other value passes through untouched, so
  clients that send absolute steps see stock behaviour. A server *without* this plugin treats the
  encoded value as an absolute step it will never reach and records nothing, so a relative
  request can never record the wrong batches. The first profile request a scheduler process
  receives also runs one throwaway CPU profiler session there (:func:`warm_profiler`), so the
  process's one-time profiler costs are paid between batches, not in the window's first batch.
* ``SchedulerInternalStateController.get_internal_state``: adds ``"profwin_sglang"`` (this
  protocol's version, the base, and the live ``forward_ct``) to each scheduler's entry of
  ``/server_info``'s ``internal_states``, which is how clients find out that relative windows work.

This module imports nothing from profwin or sglang at import time: SGLang loads it early in every
process, and it must stay cheap and never break a server. If SGLang's internals moved (another
version), the hooks are not installed, the capability is not reported, and clients fall back.

The capability is announced only by a server whose hooks are installed, so a client never sends
the encoded ``start_step`` to a server that would read it as an absolute step (SGLang 0.5.12, for
instance, loads the plugin but has no ``scheduler_components``). Where a client must decide
before the server runs (verl's builders run in the process that launches SGLang),
:func:`unavailable_here` answers the same question from the SGLang installed in that process,
without importing it.
"""

from __future__ import annotations

import gc
import importlib.metadata
import importlib.util
import logging
import time
from pathlib import Path
from typing import Any

__all__ = ["PROTOCOL", "RELATIVE_BASE", "decode_relative", "register", "unavailable_here", "warm_profiler"]

RELATIVE_BASE = 1 << 40
"""Offset that marks a ``start_step`` as relative; 2**40 batches is decades of serving."""

PROTOCOL = 1
"""Version of what the hooks do; clients check it in ``/server_info``."""

STATE_KEY = "profwin_sglang"

_INIT_PROFILE = "sglang.srt.managers.scheduler_components.profiler_manager.SchedulerProfilerManager._init_profile"
_INTERNAL_STATE = "sglang.srt.managers.scheduler_components.internal_state.SchedulerInternalStateController.get_internal_state"
_START_STEP_ARG = 2  # _init_profile(self, output_dir, start_step, ...): positional index incl. self
_DISTRIBUTION = "profwin-sglang"
_ENTRY_GROUP = "sglang.srt.plugins"
FIRST_VERSION = "0.5.23"
"""The first SGLang release the hooks are known to install on (0.5.12 has no ``HOOK_PACKAGE``)."""
HOOK_PACKAGE = "sglang.srt.managers.scheduler_components"
"""Where the hooked classes live; SGLang 0.5.12 keeps the profiler in a scheduler mixin instead."""

logger = logging.getLogger(__name__)


def decode_relative(start_step: object, forward_ct: int) -> object:
    """The absolute step for an encoded relative ``start_step``; anything else unchanged."""
    if isinstance(start_step, int) and RELATIVE_BASE <= start_step < 2 * RELATIVE_BASE:
        return forward_ct + 1 + (start_step - RELATIVE_BASE)
    return start_step


_warmed = False


def warm_profiler(manager: Any) -> float | None:
    """Once per process, before the first profile request is configured: start and stop a CPU
    torch profiler around one tiny op, recording nothing anyone keeps (no trace is exported).

    A fresh server's first window otherwise pays, inside its first recorded batch, what torch does
    the first time a process profiles (measured in docs/performance.md, "What a window costs").
    Skipped while a profile is in progress (a second profiler cannot start), where SGLang replaced
    ``torch.profiler.profile`` (Ascend: torch_npu's profiler), and on any error: it must never break
    a server. Returns the milliseconds it took, or ``None`` when it did not run."""
    global _warmed
    if _warmed or getattr(manager, "profile_in_progress", False):
        return None
    _warmed = True
    began = time.perf_counter()
    collecting = gc.isenabled()
    # torch's profiler objects are reference cycles: left to the collector, this one would be
    # destroyed at some later collection, perhaps inside a live session's stop (where SGLang's
    # scheduler has died of a segfault while collecting garbage). No collection runs during the
    # warm-up, so its objects stay in the young generation, freed right after it (~1.5 ms).
    gc.disable()
    try:
        import torch

        if torch.autograd._profiler_enabled() or not torch.profiler.profile.__module__.startswith("torch."):
            return None
        with (
            torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]),
            torch.profiler.record_function("profwin.warm_up"),
        ):
            torch.zeros(1).add_(1)
        gc.collect(1)
    except Exception as exc:
        logger.warning("profwin: the profiler warm-up failed (the window is unaffected): %s", exc)
        return None
    finally:
        if collecting:
            gc.enable()
    took = (time.perf_counter() - began) * 1e3
    logger.info("profwin: profiler warmed up in %.1f ms, before the first window of this process", took)
    return took


def _relative_start(original: Any, *args: Any, **kwargs: Any) -> Any:
    manager = args[0]
    warm_profiler(manager)
    forward_ct = manager.get_forward_ct()
    if "start_step" in kwargs:
        kwargs["start_step"] = decode_relative(kwargs["start_step"], forward_ct)
        absolute = kwargs["start_step"]
    elif len(args) > _START_STEP_ARG:
        absolute = decode_relative(args[_START_STEP_ARG], forward_ct)
        args = (*args[:_START_STEP_ARG], absolute, *args[_START_STEP_ARG + 1 :])
    else:
        absolute = None
    if absolute is not None:
        logger.info("profwin: profile request at forward_ct=%d starts at step %s", forward_ct, absolute)
    return original(*args, **kwargs)


def _relative_hook_applied() -> bool:
    """Whether SGLang really applied the ``_init_profile`` hook: ``HookRegistry.apply_hooks`` logs
    and skips a target it cannot patch, and a server must not report a capability it lacks."""
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry
    except ImportError:
        return False
    return _INIT_PROFILE in getattr(HookRegistry, "_patched", ())


def _report_capability(result: Any, controller: Any, *args: Any, **kwargs: Any) -> Any:
    state = getattr(result, "internal_state", None)
    if isinstance(state, dict) and _relative_hook_applied():
        state[STATE_KEY] = {
            "protocol": PROTOCOL,
            "relative_base": RELATIVE_BASE,
            "forward_ct": int(controller.scheduler.forward_ct),
        }
    return result


def _module_of(target: str) -> str:
    """``a.b.c.Class.method`` -> ``a.b.c``: the module a hook target lives in."""
    return target.rsplit(".", 2)[0]


_NEEDED_MODULES = ("sglang.srt.plugins.hook_registry", _module_of(_INIT_PROFILE), _module_of(_INTERNAL_STATE))


def _missing_module(package_dir: Path, module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return not ((package_dir / relative).with_suffix(".py").is_file() or (package_dir / relative / "__init__.py").is_file())


def unavailable_here() -> str | None:
    """Why SGLang servers started from this Python environment would not run the hooks, or ``None``
    when :func:`register` can install them here.

    Checked without importing SGLang (its import takes seconds and may need a GPU): SGLang is
    installed; the modules :func:`register` imports exist in it; this package's
    ``sglang.srt.plugins`` entry point is installed; ``SGLANG_PLUGINS``, when set, names it.
    """
    spec = importlib.util.find_spec("sglang")
    if spec is None or spec.origin is None:
        return "SGLang is not installed in this environment"
    try:
        version = importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        version = "(version unknown)"
    package_dir = Path(spec.origin).parent
    missing = [module for module in _NEEDED_MODULES if _missing_module(package_dir, module)]
    if missing:
        return f"SGLang {version} has no {', '.join(missing)} (the server plugin's hooks need SGLang >= {FIRST_VERSION})"
    from profwin.plugin import engine_plugin_missing  # the client side: profwin is here

    return engine_plugin_missing(_DISTRIBUTION, _ENTRY_GROUP, "SGLANG_PLUGINS", empty_allows_all=True)


def register() -> None:
    """Entry point of group ``sglang.srt.plugins``: register both hooks, or none."""
    try:
        from sglang.srt.managers.scheduler_components.internal_state import SchedulerInternalStateController
        from sglang.srt.managers.scheduler_components.profiler_manager import SchedulerProfilerManager
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
    except ImportError as exc:  # another SGLang layout: stay out of the way, clients fall back
        logger.warning("profwin: relative profiling windows unavailable on this SGLang: %s", exc)
        return
    if not (
        hasattr(SchedulerProfilerManager, "_init_profile") and hasattr(SchedulerInternalStateController, "get_internal_state")
    ):
        logger.warning("profwin: relative profiling windows unavailable: SGLang's profiler manager has changed")
        return
    HookRegistry.register(_INIT_PROFILE, _relative_start, HookType.AROUND)
    HookRegistry.register(_INTERNAL_STATE, _report_capability, HookType.AFTER)
