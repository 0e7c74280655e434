"""OpenRLHF's ``SamplesGenerator.generate_samples`` with profiling: one session on every engine
actor around each chosen rollout, in whichever process runs it.

``generate_samples`` runs once per training step in a Ray worker (the ``PPOTrainer`` actor, or
``GenerateSamplesActor`` in OpenRLHF's async mode), which imports
``openrlhf.trainer.ppo_utils.samples_generator`` itself. :func:`setup` is the
``worker_process_setup_hook`` profwin-openrlhf adds to the job's Ray ``runtime_env``: in every
worker it reads the settings (:data:`profwin_openrlhf.config.ENV`) and arranges that this module
is patched when it is imported (or now, if it is), at no cost to workers that never import it.

Around a chosen rollout, profwin-core's :class:`~profwin.plugin.RolloutProfiler` starts and stops
every engine in the generator's ``vllm_engines`` (all or none; the rollout runs unprofiled when
one cannot start), each reached through profwin-ray's actor target
(``cluster("ray").engine_target``: its calls run in the engine's actor, where its files are, and
the files come back to this node); other rollouts cost a counter. Each record is logged.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from profwin.plugin import RolloutProfiler, RolloutRecord, cluster
from profwin_openrlhf.actor import ACTOR_METHOD
from profwin_openrlhf.config import OpenRLHFProfiling

__all__ = ["GENERATOR_MODULE", "install", "records", "setup"]

GENERATOR_MODULE = "openrlhf.trainer.ppo_utils.samples_generator"
"""Where OpenRLHF's ``SamplesGenerator`` is defined."""

logger = logging.getLogger("profwin_openrlhf")
_MARK = "_profwin_wrapped"
_lock = threading.Lock()
_profilers: list[RolloutProfiler] = []  # every generator's profiler in this process, oldest first


def records() -> list[RolloutRecord]:
    """What profiling did around each profiled rollout in this process, oldest first."""
    with _lock:
        return [record for profiler in _profilers for record in profiler.records]


def setup() -> None:
    """Ray's ``worker_process_setup_hook``: profile ``generate_samples`` in this worker when the
    job carries profwin-openrlhf's settings. Never raises: a worker must start whatever happens."""
    try:
        settings = OpenRLHFProfiling.from_env()
        if settings is not None:
            install(settings)
    except Exception as exc:
        logger.warning("profwin: rollouts in this worker are not profiled: %s: %s", type(exc).__name__, exc)


def install(settings: OpenRLHFProfiling) -> None:
    """Wrap ``SamplesGenerator.generate_samples`` with ``settings``: now if OpenRLHF's module is
    imported, else when it is."""
    module = sys.modules.get(GENERATOR_MODULE)
    if module is not None:
        _wrap(module, settings)
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(GENERATOR_MODULE, lambda m: _wrap(m, settings)))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` right after the module ``name`` is executed, once."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # the real finders find it; this one only watches
        spec = importlib.util.find_spec(fullname)
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module, then = loader.exec_module, self.then

        def exec_then(module: ModuleType) -> None:
            exec_module(module)
            try:
                then(module)
            except Exception as exc:  # OpenRLHF's import must succeed whatever profwin does
                logger.warning("profwin: rollouts are not profiled: %s: %s", type(exc).__name__, exc)

        loader.exec_module = exec_then  # type: ignore[method-assign]
        return spec


def _wrap(module: ModuleType, settings: OpenRLHFProfiling) -> None:
    generator = module.SamplesGenerator
    original = generator.generate_samples
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def generate_samples(self: Any, **generate_kwargs: Any) -> Any:
        profiler, rollout_id = _next_rollout(self, settings)
        around = profiler.rollout(rollout_id)
        try:
            with around:
                return original(self, **generate_kwargs)
        finally:
            record = getattr(around, "record", None)
            if record is not None:
                _log(record)

    setattr(generate_samples, _MARK, True)
    generator.generate_samples = generate_samples


def _next_rollout(generator: Any, settings: OpenRLHFProfiling) -> tuple[RolloutProfiler, int]:
    """This generator's profiler (made on its first rollout) and the id of the rollout about to run."""
    with _lock:
        state = generator.__dict__.get("_profwin")
        if state is None:
            profiler = RolloutProfiler("vllm", settings.spec_here(), settings.rollouts, engines=lambda: _engines(generator))
            _profilers.append(profiler)
            state = generator.__dict__["_profwin"] = [profiler, 0]
        rollout_id = state[1]
        state[1] += 1
        return state[0], rollout_id


def _engines(generator: Any) -> list[Any]:
    """Every engine actor of the generator, as profwin-ray's targets: ``engine<i>`` by OpenRLHF's
    order (``--vllm.num_engines``), which names their files."""
    ray_cluster = cluster("ray")
    return [
        ray_cluster.engine_target(actor, "vllm", attribute="llm", method=ACTOR_METHOD, name=f"engine{i}")
        for i, actor in enumerate(generator.vllm_engines)
    ]


def _log(record: RolloutRecord) -> None:
    files = ", ".join(a.path.name for a in record.artifacts)
    if record.ok:
        logger.info("profwin: %s%s", record.message, f" ({files})" if files else "")
    else:
        logger.warning("profwin: %s", record.message)
