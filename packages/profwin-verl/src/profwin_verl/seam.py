"""``patch()``/``unpatch()``: verl's rollout profiling functions swapped for profwin's, in
``verl.utils.profiler.config`` and in every verl module that imported them by name (verl's vLLM,
SGLang and TRT-LLM rollout servers, ``verl.utils.profiler``)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from profwin.plugin import PluginError, checked
from profwin_verl import sglang_stop

__all__ = ["NAMES", "SUPPORTED_VERL", "patch", "unpatch"]

SUPPORTED_VERL = "0.9"
"""The verl release series whose functions :func:`patch` replaces (their signatures are checked
against verl 0.9.1)."""

NAMES: tuple[str, ...] = (
    "build_vllm_profiler_args",
    "build_sglang_profiler_args",
    "rollout_trace_dir",
    "rollout_profiler_global_ranks",
    "rollout_trace_local_rank",
    "relocate_rollout_traces",
)
"""The functions swapped."""

_ORIGINALS: dict[str, Callable[..., Any]] = {}  # verl's own functions, kept from the first patch()


@checked
def patch(*, force: bool = False) -> list[str]:
    """Swap verl's functions for profwin's wherever verl holds them; returns ``module.name`` for
    each one swapped by this call (empty when all were already swapped).

    Idempotent; a verl module imported later that imports the names from
    ``verl.utils.profiler.config`` gets profwin's. Raises :class:`profwin.PluginError` when verl is
    not importable, or is not a 0.9 release (``force=True`` patches anyway).
    """
    config = _verl_config()
    version = str(getattr(sys.modules["verl"], "__version__", "unknown"))
    if not force and version.split(".")[:2] != SUPPORTED_VERL.split("."):
        raise PluginError(
            f"profwin_verl.patch() replaces verl {SUPPORTED_VERL}.x's rollout profiling functions, and verl is {version}: "
            "their signatures may differ; check them and call patch(force=True) to patch anyway"
        )
    missing = [name for name in NAMES if not callable(getattr(config, name, None))]
    if missing:
        raise PluginError(
            f"profwin_verl.patch() replaces verl's rollout profiling functions, and verl {version}'s "
            f"verl.utils.profiler.config has no {', '.join(missing)}"
        )
    if not _ORIGINALS:
        for name in NAMES:
            _ORIGINALS[name] = getattr(config, name)
    ours = _ours()
    swapped = _swap({id(_ORIGINALS[name]): (name, ours[name]) for name in NAMES})
    # verl's SGLang server stop takes an SGLang that stopped by itself (sglang_stop.py).
    wrapped = sglang_stop.install()
    return swapped + ([wrapped] if wrapped else [])


def unpatch() -> list[str]:
    """Put verl's own functions back everywhere :func:`patch` put profwin's; returns what was restored."""
    if not _ORIGINALS:
        return []
    ours = _ours()
    restored = sglang_stop.uninstall()
    return _swap({id(ours[name]): (name, _ORIGINALS[name]) for name in NAMES}) + ([restored] if restored else [])


def _swap(replacements: dict[int, tuple[str, Callable[..., Any]]]) -> list[str]:
    """In every imported verl module, replace each attribute named in ``NAMES`` that *is* one of
    the functions being replaced (a module's own function of the same name is left alone)."""
    swapped = []
    for module_name, module in sorted(sys.modules.items()):
        if not isinstance(module, ModuleType) or not (module_name == "verl" or module_name.startswith("verl.")):
            continue
        namespace = vars(module)
        for name in NAMES:
            current = namespace.get(name)
            if current is None or id(current) not in replacements:
                continue
            wanted_name, replacement = replacements[id(current)]
            if wanted_name == name:
                setattr(module, name, replacement)
                swapped.append(f"{module_name}.{name}")
    return swapped


def _verl_config() -> ModuleType:
    try:
        return importlib.import_module("verl.utils.profiler.config")
    except ImportError as exc:
        raise PluginError(
            f"profwin_verl.patch() needs verl installed: cannot import verl.utils.profiler.config ({exc})"
        ) from None


def _ours() -> dict[str, Callable[..., Any]]:
    from profwin_verl import builders, rollout

    return {name: getattr(builders, name, None) or getattr(rollout, name) for name in NAMES}
