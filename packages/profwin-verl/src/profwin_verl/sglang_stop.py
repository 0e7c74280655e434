"""verl's SGLang server stop, made to take an SGLang that stopped by itself.

verl's ``SGLangHttpServer.stop_profile`` (verl/workers/rollout/sglang_rollout/async_sglang_server.py)
awaits ``tokenizer_manager.stop_profile()``, which raises ``RuntimeError("Profiling is not in
progress...")`` when SGLang already stopped: a window of ``num_steps`` batches that ended before the
rollout did, which is the usual case (verl's own ``num_steps = end - start`` and profwin's alike).
The error ends verl's rollout, and the relocation after it never runs. Measured on SGLang 0.5.12
and 0.5.23 through verl's own methods on a real tokenizer manager.

:func:`install` wraps that method once, where verl's server module is imported (now, or when it is
imported later in this process): the "not in progress" answer is a stop (the trace is written), and
verl's relocation runs as after any stop. Any other error is verl's and goes on.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

__all__ = ["SERVER_MODULE", "install", "uninstall"]

SERVER_MODULE = "verl.workers.rollout.sglang_rollout.async_sglang_server"
_MARK = "_profwin_stop"


def _wrap(module: ModuleType) -> bool:
    server = getattr(module, "SGLangHttpServer", None)
    original = getattr(server, "stop_profile", None)
    if server is None or original is None or getattr(original, _MARK, False):
        return False

    @functools.wraps(original)
    async def stop_profile(self: Any) -> None:
        try:
            await original(self)
        except RuntimeError as exc:
            if "not in progress" not in str(exc).lower():
                raise
            # SGLang stopped by itself at the window's end and wrote the trace: relocate it, as
            # verl does after a stop (the module's relocate_rollout_traces: profwin's once patched).
            module.relocate_rollout_traces(
                self.profiler_controller.config, self.replica_rank, self.replica_world_size, self.profiler_keep_global_ranks
            )

    setattr(stop_profile, _MARK, original)
    server.stop_profile = stop_profile
    return True


class _AfterImport(importlib.abc.MetaPathFinder):
    """Wraps the server module right after it executes, the first time it is imported."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != SERVER_MODULE:
            return None
        sys.meta_path.remove(self)  # one shot, and not asked again for the lookup below
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute: Callable[[ModuleType], None] = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _wrap(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> str | None:
    """Wrap verl's SGLang server stop where its module is (``SERVER_MODULE.SGLangHttpServer.stop_profile``
    when done now; ``None`` when it will be done at the module's import)."""
    module = sys.modules.get(SERVER_MODULE)
    if module is not None:
        return f"{SERVER_MODULE}.SGLangHttpServer.stop_profile" if _wrap(module) else None
    if not any(isinstance(finder, _AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())
    return None


def uninstall() -> str | None:
    """Give verl's server its own stop back (and forget a pending wrap)."""
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _AfterImport)]
    server = getattr(sys.modules.get(SERVER_MODULE), "SGLangHttpServer", None)
    original = getattr(getattr(server, "stop_profile", None), _MARK, None)
    if server is None or not callable(original):
        return None
    server.stop_profile = original
    return f"{SERVER_MODULE}.SGLangHttpServer.stop_profile"
