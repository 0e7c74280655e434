"""``enable(settings)``: profiling put in place in OpenRLHF's driver, before ``train()`` runs.

Three things, each at OpenRLHF's own seam (read from OpenRLHF 0.11.2):

- ``openrlhf.trainer.ray.vllm_engine.RolloutRayActor``, the class ``create_vllm_engines`` creates
  each engine actor from (a module global it looks up at each call), becomes profwin's subclass
  (:mod:`profwin_openrlhf.actor`): its engine gets ``profiler_config`` for the vLLM in the actor;
- ``ray.init``, which OpenRLHF's ``train()`` calls when Ray is not up, adds to the ``runtime_env``
  OpenRLHF passes (its ``env_vars`` kept) profwin's ``worker_process_setup_hook`` and the settings
  (:func:`runtime_env`), so the worker that runs ``SamplesGenerator.generate_samples`` profiles it
  (:mod:`profwin_openrlhf.generator`), whichever actor that is;
- ``generate_samples`` in this process too.

An OpenRLHF this was not written for (another release series, or its seams missing) is left
alone with one warning: OpenRLHF runs as without profwin. Nothing here ever stops OpenRLHF.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import sys
from collections.abc import Mapping
from typing import Any

from profwin.plugin import EngineVersion, PluginError, checked, warn
from profwin_openrlhf.actor import original_class, profiled_actor_class
from profwin_openrlhf.config import ENV, OpenRLHFProfiling
from profwin_openrlhf.generator import GENERATOR_MODULE, install

__all__ = ["ENGINE_MODULE", "SETUP_HOOK", "SUPPORTED_OPENRLHF", "check_openrlhf", "enable", "runtime_env"]

SUPPORTED_OPENRLHF = "0.11"
"""The OpenRLHF release series profwin-openrlhf was written against (0.11.2's seams)."""
ENGINE_MODULE = "openrlhf.trainer.ray.vllm_engine"
SETUP_HOOK = "profwin_openrlhf.generator.setup"
"""The ``worker_process_setup_hook`` (a path Ray imports in each worker)."""

_state: dict[str, Any] = {}  # what enable() replaced: the original actor class and ray.init


@checked
def check_openrlhf(version: str | None = None) -> str:
    """The installed OpenRLHF's version when profwin-openrlhf supports it; else a
    :class:`~profwin.PluginError` saying why (another series, or a seam missing)."""
    if version is None:
        try:
            version = importlib.metadata.version("openrlhf")
        except importlib.metadata.PackageNotFoundError:
            raise PluginError("OpenRLHF is not installed in this environment") from None
    parsed = EngineVersion.parse(version, path="openrlhf")
    if parsed.key.release[:2] != tuple(map(int, SUPPORTED_OPENRLHF.split("."))):
        raise PluginError(
            f"profwin-openrlhf profiles OpenRLHF {SUPPORTED_OPENRLHF}.x (its RolloutRayActor and SamplesGenerator), "
            f"and OpenRLHF is {version}: its seams may differ"
        )
    try:
        engines = importlib.import_module(ENGINE_MODULE)
        generator = importlib.import_module(GENERATOR_MODULE)
    except Exception as exc:  # OpenRLHF missing (a version given), or its modules failing to import
        missing = isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "openrlhf"
        if missing:
            raise PluginError(
                f"OpenRLHF {version} is a version profwin-openrlhf supports, but OpenRLHF is not installed in this "
                f"environment, so its seams cannot be checked: pip install 'openrlhf=={SUPPORTED_OPENRLHF}.*'"
            ) from None
        raise PluginError(f"OpenRLHF {version}'s {ENGINE_MODULE} cannot be imported: {type(exc).__name__}: {exc}") from None
    try:
        base = original_class(engines.RolloutRayActor)
    except AttributeError:
        raise PluginError(f"OpenRLHF {version}'s {ENGINE_MODULE}.RolloutRayActor is not a Ray actor class") from None
    if not inspect.iscoroutinefunction(vars(base).get("__init__")) or not callable(getattr(engines, "create_vllm_engines", None)):
        raise PluginError(f"OpenRLHF {version}'s {ENGINE_MODULE} has no async RolloutRayActor or create_vllm_engines")
    if not callable(getattr(getattr(generator, "SamplesGenerator", None), "generate_samples", None)):
        raise PluginError(f"OpenRLHF {version}'s {GENERATOR_MODULE} has no SamplesGenerator.generate_samples")
    return version


@checked
def runtime_env(settings: OpenRLHFProfiling, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``base`` (a Ray ``runtime_env``) with profwin's setup hook and settings added, for a driver
    that starts Ray itself: ``ray.init(runtime_env=profwin_openrlhf.runtime_env(settings, ...))``.
    Ray takes one ``worker_process_setup_hook``: a different one already there is a
    :class:`~profwin.PluginError`."""
    env = dict(base or {})
    hook = env.get("worker_process_setup_hook")
    if hook is not None and hook != SETUP_HOOK:
        raise PluginError(f"this runtime_env already has a worker_process_setup_hook ({hook!r}), and Ray takes one")
    env["worker_process_setup_hook"] = SETUP_HOOK
    env["env_vars"] = {**dict(env.get("env_vars") or {}), ENV: settings.to_json()}
    return env


@checked
def enable(settings: OpenRLHFProfiling) -> list[str]:
    """Put profiling in place for OpenRLHF's ``train()`` in this process (see the module doc);
    returns what was replaced, ``[]`` with one warning when OpenRLHF is left alone."""
    try:
        version = check_openrlhf()
        return _enable(settings, version)
    except Exception as exc:  # whatever went wrong, OpenRLHF must still run
        why = str(exc) if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
        warn(f"profwin-openrlhf left OpenRLHF unprofiled: {why}", RuntimeWarning, stacklevel=2)
        return []


def _enable(settings: OpenRLHFProfiling, version: str) -> list[str]:
    import ray

    if ray.is_initialized() and ray.get_runtime_context().runtime_env.get("worker_process_setup_hook") != SETUP_HOOK:
        raise PluginError(
            "Ray is already up in this process without profwin's worker setup hook, so the trainer's rollouts "
            "cannot be profiled: start Ray with ray.init(runtime_env=profwin_openrlhf.runtime_env(settings))"
        )
    engines: Any = sys.modules[ENGINE_MODULE]
    replaced = []
    if "actor" not in _state:
        _state["actor"] = engines.RolloutRayActor
        engines.RolloutRayActor = profiled_actor_class(engines.RolloutRayActor, settings.to_json())
        replaced.append(f"{ENGINE_MODULE}.RolloutRayActor")
    if not ray.is_initialized() and "ray.init" not in _state:
        _state["ray.init"] = ray.init
        ray.init = _with_setup(ray.init, settings)
        replaced.append("ray.init")
    install(settings)
    return replaced


def _with_setup(init: Any, settings: OpenRLHFProfiling) -> Any:
    add = runtime_env

    @functools.wraps(init)
    def ray_init(*args: Any, **kwargs: Any) -> Any:
        kwargs["runtime_env"] = add(settings, kwargs.get("runtime_env"))
        return init(*args, **kwargs)

    return ray_init
