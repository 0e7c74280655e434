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
  request can never record the wrong batches.
* ``SchedulerInternalStateController.get_internal_state``: adds ``"profwin_sglang"`` (this
  protocol's version, the base, and the live ``forward_ct``) to each scheduler's entry of
  ``/server_info``'s ``internal_states``, which is how clients find out that relative windows work.

This module imports nothing from profwin or sglang at import time: SGLang loads it early in every
process, and it must stay cheap and never break a server. If SGLang's internals moved (another
version), the hooks are not installed, the capability is not reported, and clients fall back.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["PROTOCOL", "RELATIVE_BASE", "decode_relative", "register"]

RELATIVE_BASE = 1 << 40
"""Offset that marks a ``start_step`` as relative; 2**40 batches is decades of serving."""

PROTOCOL = 1
"""Version of what the hooks do; clients check it in ``/server_info``."""

STATE_KEY = "profwin_sglang"

_INIT_PROFILE = "sglang.srt.managers.scheduler_components.profiler_manager.SchedulerProfilerManager._init_profile"
_INTERNAL_STATE = "sglang.srt.managers.scheduler_components.internal_state.SchedulerInternalStateController.get_internal_state"
_START_STEP_ARG = 2  # _init_profile(self, output_dir, start_step, ...): positional index incl. self

logger = logging.getLogger(__name__)


def decode_relative(start_step: object, forward_ct: int) -> object:
    """The absolute step for an encoded relative ``start_step``; anything else unchanged."""
    if isinstance(start_step, int) and RELATIVE_BASE <= start_step < 2 * RELATIVE_BASE:
        return forward_ct + 1 + (start_step - RELATIVE_BASE)
    return start_step


def _relative_start(original: Any, *args: Any, **kwargs: Any) -> Any:
    manager = args[0]
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


def _report_capability(result: Any, controller: Any, *args: Any, **kwargs: Any) -> Any:
    state = getattr(result, "internal_state", None)
    if isinstance(state, dict):
        state[STATE_KEY] = {
            "protocol": PROTOCOL,
            "relative_base": RELATIVE_BASE,
            "forward_ct": int(controller.scheduler.forward_ct),
        }
    return result


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
