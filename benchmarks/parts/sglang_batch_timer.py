"""A benchmark-only SGLang general plugin: every scheduler batch's wall time, profiled or not.

benchmarks/parts/sglang_fidelity.py installs it in the servers it launches (an entry point of
group ``sglang.srt.plugins`` in a generated dist-info, as an install would register it). In each
scheduler process it wraps, with ``time.perf_counter`` only (no profiler):

* ``Scheduler.run_batch``: the whole batch as the scheduler runs it, including SGLang's profiler
  check before the forward (where ``start_step`` starts and auto-stops the profiler);
* ``ModelRunner.forward``: the code SGLang's ``step[<MODE> bs=N]`` trace span encloses.

Each batch appends one line to the file named by ``PROFWIN_BATCH_TIMES``: ``forward_ct mode bs
run_batch_ms forward_ms``. The same clock in every variant, so an unprofiled batch and a profiled
one are measured alike. Without the variable the plugin does nothing.
"""

from __future__ import annotations

import os
import time
from typing import Any

_RUN_BATCH = "sglang.srt.managers.scheduler.Scheduler.run_batch"
_FORWARD = "sglang.srt.model_executor.model_runner.ModelRunner.forward"
_last_forward_ms = [0.0]


def _timed_forward(original: Any, *args: Any, **kwargs: Any) -> Any:
    began = time.perf_counter()
    try:
        return original(*args, **kwargs)
    finally:
        _last_forward_ms[0] = (time.perf_counter() - began) * 1e3


def _timed_run_batch(path: str) -> Any:
    def hook(original: Any, scheduler: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
        _last_forward_ms[0] = 0.0
        began = time.perf_counter()
        try:
            return original(scheduler, batch, *args, **kwargs)
        finally:
            wall = (time.perf_counter() - began) * 1e3
            line = f"{scheduler.forward_ct} {batch.forward_mode.name} {batch.batch_size()} {wall:.4f} {_last_forward_ms[0]:.4f}\n"
            with open(path, "a", encoding="utf-8") as f:
                f.write(line)

    return hook


def register() -> None:
    """Entry point of group ``sglang.srt.plugins``."""
    path = os.environ.get("PROFWIN_BATCH_TIMES")
    if not path:
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    HookRegistry.register(_RUN_BATCH, _timed_run_batch(path), HookType.AROUND)
    HookRegistry.register(_FORWARD, _timed_forward, HookType.AROUND)
