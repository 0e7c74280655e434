"""OpenRLHF's seams, profiled: put in place in OpenRLHF's driver by :func:`enable`, before ``train()`` runs.

Three things, each at OpenRLHF's own seam (read from OpenRLHF 0.11.2):

- ``openrlhf.trainer.ray.vllm_engine.RolloutRayActor``, the class ``create_vllm_engines`` creates
  each engine actor from (a module global it looks up at each call), becomes profwin's subclass
  (:mod:`profwin_openrlhf.actor`): its engine gets ``profiler_config`` for the vLLM in the actor;
- ``ray.init``, which OpenRLHF's ``train()`` calls when Ray is not up, adds to the ``runtime_env``
  OpenRLHF passes (its ``env_vars`` kept) profwin's ``worker_process_setup_hook`` (:func:`setup`)
  and the settings (:func:`runtime_env`), so the worker that runs
  ``SamplesGenerator.generate_samples`` profiles it, whichever actor that is;
- ``SamplesGenerator.generate_samples`` in this process too.

``generate_samples`` runs once per training step in a Ray worker (the ``PPOTrainer`` actor, or
``GenerateSamplesActor`` in OpenRLHF's async mode), which imports
``openrlhf.trainer.ppo_utils.samples_generator`` itself: :func:`setup`, in every worker, reads the
settings (:data:`profwin_openrlhf.settings.ENV`) and arranges that the module is wrapped when it
is imported (or now, if it is), at no cost to workers that never import it. Around a chosen
rollout, profwin-core's rollout profiler starts and stops every engine in the generator's
``vllm_engines`` (all or none), each reached through profwin-ray's actor target
(``cluster("ray").engine_target``: its calls run in the engine's actor, where its files are, and
the files come back to this node); other rollouts cost a counter.

The verb pair, its policy and ``records()`` are core's (:class:`profwin.plugin.TrainerIntegration`).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from profwin.plugin import PluginError, TrainerIntegration, checked, cluster
from profwin.plugin.trainers import RolloutProfiler
from profwin_openrlhf._plugin import PLUGIN
from profwin_openrlhf.actor import ACTOR_METHOD, original_class, profiled_actor_class
from profwin_openrlhf.settings import ENV, OpenRLHFProfiling

__all__ = [
    "ENGINE_MODULE",
    "GENERATOR_MODULE",
    "INTEGRATION",
    "SETUP_HOOK",
    "OpenRLHFIntegration",
    "disable",
    "enable",
    "records",
    "runtime_env",
    "setup",
]

ENGINE_MODULE = "openrlhf.trainer.ray.vllm_engine"
"""Where OpenRLHF's ``RolloutRayActor`` and ``create_vllm_engines`` are."""
GENERATOR_MODULE = "openrlhf.trainer.ppo_utils.samples_generator"
"""Where OpenRLHF's ``SamplesGenerator`` is defined."""
SETUP_HOOK = "profwin_openrlhf.seam.setup"
"""The ``worker_process_setup_hook`` (a path Ray imports in each worker)."""


class OpenRLHFIntegration(TrainerIntegration[OpenRLHFProfiling]):
    """OpenRLHF's engine actors and ``generate_samples``, profiled (see the module doc)."""

    trainer = "OpenRLHF"
    settings_type = OpenRLHFProfiling

    def default_settings(self) -> OpenRLHFProfiling:
        settings = OpenRLHFProfiling.from_env()
        if settings is None:
            raise PluginError(f"enable() needs the settings: OpenRLHFProfiling(rollouts=..., spec=...), or {ENV} set")
        return settings

    def seams(self) -> None:
        engines, generator = self.imported(ENGINE_MODULE), self.imported(GENERATOR_MODULE)
        try:
            base = original_class(engines.RolloutRayActor)
        except AttributeError:
            raise PluginError(f"OpenRLHF's {ENGINE_MODULE}.RolloutRayActor is not a Ray actor class") from None
        if not inspect.iscoroutinefunction(vars(base).get("__init__")) or not callable(
            getattr(engines, "create_vllm_engines", None)
        ):
            raise PluginError(f"OpenRLHF's {ENGINE_MODULE} has no async RolloutRayActor or create_vllm_engines")
        if not callable(getattr(getattr(generator, "SamplesGenerator", None), "generate_samples", None)):
            raise PluginError(f"OpenRLHF's {GENERATOR_MODULE} has no SamplesGenerator.generate_samples")

    def install(self, settings: OpenRLHFProfiling | None) -> list[str]:
        import ray

        if settings is None:  # default_settings() gives them or refuses
            raise PluginError("no settings")

        if ray.is_initialized() and ray.get_runtime_context().runtime_env.get("worker_process_setup_hook") != SETUP_HOOK:
            raise PluginError(
                "Ray is already up in this process without profwin's worker setup hook, so the trainer's rollouts "
                "cannot be profiled: start Ray with ray.init(runtime_env=profwin_openrlhf.runtime_env(settings))"
            )
        text = settings.to_env()
        engines = sys.modules[ENGINE_MODULE]
        replaced = self.replace(engines, "RolloutRayActor", lambda actor: profiled_actor_class(actor, text), key=text)
        if not ray.is_initialized():
            replaced += self.replace(ray, "init", self._with_setup)
        return replaced + self.when_imported(GENERATOR_MODULE, self._wrap_generator)

    def in_worker(self) -> None:
        """:func:`setup`'s work: the settings from :data:`ENV`, and ``generate_samples`` wrapped
        when its module is imported. Never raises: a worker must start whatever happens."""
        try:
            settings = OpenRLHFProfiling.from_env()
            if settings is not None:
                self.settings = settings
                self.when_imported(GENERATOR_MODULE, self._wrap_generator)
        except Exception as exc:
            self.refuse(exc)

    def _with_setup(self, init: Any) -> Any:
        @functools.wraps(init)
        def ray_init(*args: Any, **kwargs: Any) -> Any:
            settings = self.settings
            if settings is not None:
                kwargs["runtime_env"] = runtime_env(settings, kwargs.get("runtime_env"))
            return init(*args, **kwargs)

        return ray_init

    def _wrap_generator(self, module: ModuleType) -> list[str]:
        return self.replace(module.SamplesGenerator, "generate_samples", self._profiled)

    def _profiled(self, original: Any) -> Any:
        @functools.wraps(original)
        def generate_samples(generator: Any, **generate_kwargs: Any) -> Any:
            settings = self.settings
            if settings is None:
                return original(generator, **generate_kwargs)
            profiler, rollout_id = self.next_rollout(generator, settings, lambda chosen: _profiler(generator, chosen))
            return self.around(profiler, rollout_id, lambda: original(generator, **generate_kwargs))

        return generate_samples


def _profiler(generator: Any, settings: OpenRLHFProfiling) -> RolloutProfiler:
    return RolloutProfiler(
        "vllm", settings.spec_here(), settings.rollouts, engines=lambda: _engines(generator), timeout=settings.timeout
    )


def _engines(generator: Any) -> list[Any]:
    """Every engine actor of the generator, as profwin-ray's targets: ``engine<i>`` by OpenRLHF's
    order (``--vllm.num_engines``), which names their files."""
    ray_cluster = cluster("ray")
    return [
        ray_cluster.engine_target(actor, "vllm", attribute="llm", method=ACTOR_METHOD, name=f"engine{i}")
        for i, actor in enumerate(generator.vllm_engines)
    ]


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
    env["env_vars"] = {**dict(env.get("env_vars") or {}), ENV: settings.to_env()}
    return env


INTEGRATION = OpenRLHFIntegration(PLUGIN)
"""profwin-openrlhf's one integration (its plugin's target)."""
enable, disable, records = INTEGRATION.enable, INTEGRATION.disable, INTEGRATION.records


def setup() -> None:
    """Ray's ``worker_process_setup_hook`` (:data:`SETUP_HOOK`): profile ``generate_samples`` in
    this worker when the job carries profwin-openrlhf's settings. Never raises."""
    INTEGRATION.in_worker()
