"""verl's SGLang server stop, made to take an SGLang that stopped by itself.

verl's ``SGLangHttpServer.stop_profile`` (verl/workers/rollout/sglang_rollout/async_sglang_server.py)
awaits ``tokenizer_manager.stop_profile()``, which raises ``RuntimeError("Profiling is not in
progress...")`` when SGLang already stopped: a window of ``num_steps`` batches that ended before the
rollout did, which is the usual case (verl's own ``num_steps = end - start`` and profwin's alike).
The error ends verl's rollout, and the relocation after it never runs. Measured on SGLang 0.5.12
and 0.5.23 through verl's own methods on a real tokenizer manager.

:func:`stopping` is the wrapped method, which :mod:`profwin_verl.seam` puts in place where verl's
server module is imported (now, or when it is imported later in this process): the "not in
progress" answer is a stop (the trace is written), and verl's relocation runs as after any stop.
Any other error is verl's and goes on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from types import ModuleType
from typing import Any

__all__ = ["SERVER_MODULE", "stopping"]

SERVER_MODULE = "verl.workers.rollout.sglang_rollout.async_sglang_server"


def stopping(
    original: Callable[[Any], Coroutine[Any, Any, None]], module: ModuleType
) -> Callable[[Any], Coroutine[Any, Any, None]]:
    """``SGLangHttpServer.stop_profile`` of ``module`` (verl's server module), taking SGLang's
    "not in progress" as the stop it is."""

    @functools.wraps(original)
    async def stop_profile(self: Any) -> None:
        try:
            await original(self)
        except RuntimeError as exc:
            if "not in progress" not in str(exc).lower():
                raise
            # SGLang stopped by itself at the window's end and wrote the trace: relocate it, as
            # verl does after a stop (the module's relocate_rollout_traces: profwin's once enabled).
            module.relocate_rollout_traces(
                self.profiler_controller.config, self.replica_rank, self.replica_world_size, self.profiler_keep_global_ranks
            )

    return stop_profile
