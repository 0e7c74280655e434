"""verl's seam: its rollout profiling functions swapped for profwin's by :func:`enable`, in
``verl.utils.profiler.config`` and in every verl module that imported them by name (verl's vLLM,
SGLang and TRT-LLM rollout servers, ``verl.utils.profiler``), and verl's SGLang server stop made to
take an SGLang that stopped by itself (:mod:`profwin_verl.sglang_stop`).

verl's settings are verl's own config (its ``global_profiler`` and role ``profiler`` blocks, read
with verl's meaning by :func:`profwin_verl.load_verl`): ``enable`` takes none. The verb pair, its
policy and ``records()`` are core's (:class:`profwin.plugin.TrainerIntegration`); verl starts and
stops its engines' profiler itself, so ``records()`` stays empty (its files are in ``save_path``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from profwin.plugin import PluginError, TrainerIntegration
from profwin.plugin.trainers import RolloutSettings
from profwin_verl import sglang_stop
from profwin_verl._plugin import PLUGIN

__all__ = ["CONFIG_MODULE", "INTEGRATION", "NAMES", "VerlIntegration", "disable", "enable", "records"]

CONFIG_MODULE = "verl.utils.profiler.config"
"""Where verl defines the functions swapped."""
NAMES: tuple[str, ...] = (
    "build_vllm_profiler_args",
    "build_sglang_profiler_args",
    "rollout_trace_dir",
    "rollout_profiler_global_ranks",
    "rollout_trace_local_rank",
    "relocate_rollout_traces",
)
"""The functions swapped (their signatures are checked against verl 0.9.1)."""


class VerlIntegration(TrainerIntegration[RolloutSettings]):
    """verl's rollout profiling functions, exact (see the module doc)."""

    trainer = "verl"
    unprofiled = "unpatched (verl's own rollout profiling stays in place)"

    def seams(self) -> None:
        config = self.imported(CONFIG_MODULE)
        missing = [name for name in NAMES if not callable(getattr(config, name, None))]
        if missing:
            raise PluginError(f"verl's {CONFIG_MODULE} has no {', '.join(missing)}")

    def install(self, settings: RolloutSettings | None) -> list[str]:
        """Each verl module's attribute in ``NAMES`` that *is* verl's function, swapped (a module's
        own function of the same name is left alone); a verl module imported later takes the
        names from ``verl.utils.profiler.config``, which holds profwin's."""
        config = sys.modules[CONFIG_MODULE]
        ours = _ours()
        swapped = []
        for name in NAMES:
            original = self.original(config, name)
            for module_name, module in sorted(sys.modules.items()):
                if not isinstance(module, ModuleType) or not (module_name == "verl" or module_name.startswith("verl.")):
                    continue
                if vars(module).get(name) is original:
                    swapped += self.replace(module, name, _constant(ours[name]))
        return swapped + self.when_imported(sglang_stop.SERVER_MODULE, self._stop_taking_a_stop)

    def _stop_taking_a_stop(self, module: ModuleType) -> list[str]:
        server = getattr(module, "SGLangHttpServer", None)
        if not callable(getattr(server, "stop_profile", None)):
            return []  # another verl's server: its stop stays as it is
        return self.replace(server, "stop_profile", lambda original: sglang_stop.stopping(original, module))


def _constant(value: Any) -> Callable[[Any], Any]:
    return lambda _: value


def _ours() -> dict[str, Callable[..., Any]]:
    from profwin_verl import builders, traces

    return {name: getattr(builders, name, None) or getattr(traces, name) for name in NAMES}


INTEGRATION = VerlIntegration(PLUGIN)
"""profwin-verl's one integration (its plugin's target)."""
enable, disable, records = INTEGRATION.enable, INTEGRATION.disable, INTEGRATION.records
