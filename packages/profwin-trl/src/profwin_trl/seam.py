"""TRL's seam: ``VLLMGeneration`` profiled, put in place by :func:`enable` before the trainer is built.

TRL's trainers generate through ``trl.generation.vllm_generation.VLLMGeneration`` (read from TRL
1.16.0; the same seam from 1.11). Two things, each at that seam:

- colocate mode builds its in-process ``vllm.LLM`` in ``VLLMGeneration._init_vllm`` from the
  module's global ``LLM``: profwin's stand-in for it adds the ``profiler_config`` profwin-vllm plans
  for the vLLM in this process (the window at launch on vLLM < 0.32, per session from 0.32), then
  builds TRL's ``LLM`` unchanged;
- ``VLLMGeneration.generate``, called once per generation batch, opens one profiling session
  around each chosen call (rollout *k*: the *k*-th call of that object, from 0) through
  profwin-core's rollout profiler: on the colocated ``LLM`` (each training process its own), or in
  server mode on the server TRL's client talks to (or the workers of a router in front of it),
  from the main process only, the one that sends the server its requests.

Server mode needs no route of profwin's: from TRL 1.11, ``trl vllm-serve`` execs vLLM's own server
(``vllm serve``, with the arguments it does not know passed on), whose ``/start_profile`` and
``/stop_profile`` reach every worker once it is launched with ``--profiler-config`` (``profwin
args vllm --for serve``). On vLLM < 0.32 that launch config fixes the window; a server launched
for a wider one (vLLM's default: every step) records it, and profwin trims each trace to the
window, with one warning.

The verb pair, its policy and ``records()`` are core's (:class:`profwin.plugin.TrainerIntegration`).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from profwin.plugin import PluginError, TrainerIntegration, backend
from profwin.plugin.trainers import RolloutProfiler
from profwin_trl._plugin import PLUGIN
from profwin_trl.settings import TRLProfiling

__all__ = ["COLOCATE_ENGINE", "GENERATION_MODULE", "INTEGRATION", "TRLIntegration", "disable", "enable", "records"]

GENERATION_MODULE = "trl.generation.vllm_generation"
"""Where TRL's ``VLLMGeneration`` and the ``LLM`` it builds are."""
COLOCATE_ENGINE = "colocate"
"""What results and file names call a colocated engine (vLLM adds the rank to each file)."""


class TRLIntegration(TrainerIntegration[TRLProfiling]):
    """TRL's ``VLLMGeneration``, profiled (see the module doc)."""

    trainer = "TRL"
    settings_type = TRLProfiling

    def seams(self) -> None:
        module = self.imported(GENERATION_MODULE)
        generation = getattr(module, "VLLMGeneration", None)
        if not callable(getattr(generation, "generate", None)) or not callable(getattr(generation, "_init_vllm", None)):
            raise PluginError(f"TRL's {GENERATION_MODULE} has no VLLMGeneration.generate/_init_vllm")
        if not callable(getattr(module, "LLM", None)):
            raise PluginError(f"TRL's {GENERATION_MODULE} did not import vLLM's LLM (is vLLM installed?)")

    def install(self, settings: TRLProfiling | None) -> list[str]:
        module: Any = sys.modules[GENERATION_MODULE]
        return [*self.replace(module, "LLM", self._launching), *self.replace(module.VLLMGeneration, "generate", self._profiled)]

    def _launching(self, llm: Any) -> Any:
        """TRL's ``LLM`` with ``profiler_config`` added for the current spec (see the module doc)."""

        @functools.wraps(llm)
        def LLM(*args: Any, **kwargs: Any) -> Any:  # it stands for vLLM's class
            settings = self.settings
            if settings is not None and kwargs.get("profiler_config") is None:
                config = self._launch_config(settings)
                if config is not None:
                    kwargs["profiler_config"] = config
            return llm(*args, **kwargs)

        return LLM

    def _launch_config(self, settings: Any) -> dict[str, Any] | None:
        """vLLM's ``profiler_config`` for the spec on the vLLM in this process, or ``None`` (said
        once) when it has none: the engine then starts without a profiler."""
        import vllm

        try:
            plan = backend("vllm").plan_here(settings.spec_here())  # type: ignore[attr-defined]  # profwin-vllm's: this process's vLLM
        except Exception as exc:
            self.refuse(f"its vLLM engine starts without a profiler: {exc}")
            return None
        config = plan.launch.get("profiler_config")
        if config is None:
            self.refuse(f"vLLM {vllm.__version__} takes no profiler_config: its engine starts without a profiler")
            return None
        return dict(config)

    def _profiled(self, generate: Any) -> Any:
        @functools.wraps(generate)
        def profiled(generation: Any, *args: Any, **kwargs: Any) -> Any:
            settings = self.settings
            # In server mode only the main process sends the server its requests.
            if settings is None or (generation.mode == "server" and not generation.accelerator.is_main_process):
                return generate(generation, *args, **kwargs)
            profiler, rollout_id = self.next_rollout(generation, settings, lambda chosen: self._profiler(generation, chosen))
            return self.around(profiler, rollout_id, lambda: generate(generation, *args, **kwargs))

        return profiled

    def _profiler(self, generation: Any, settings: TRLProfiling) -> RolloutProfiler:
        spec, timeout = settings.spec_here(), settings.timeout
        if generation.mode == "server" and settings.router is not None:
            return RolloutProfiler("vllm", spec, settings.rollouts, router=settings.router, timeout=timeout)
        return RolloutProfiler("vllm", spec, settings.rollouts, engines=lambda: _engines(generation, timeout), timeout=timeout)


def _engines(generation: Any, timeout: float) -> list[Any]:
    if generation.mode == "server":
        return [generation.vllm_client.base_url]
    target = backend("vllm").target(generation.llm, api_key=None, timeout=timeout)
    target.name = COLOCATE_ENGINE
    return [target]


INTEGRATION = TRLIntegration(PLUGIN)
"""profwin-trl's one integration (its plugin's target)."""
enable, disable, records = INTEGRATION.enable, INTEGRATION.disable, INTEGRATION.records
