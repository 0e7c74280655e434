"""OpenRLHF's ``RolloutRayActor`` with a profiler: the launch config decided in the actor.

OpenRLHF builds each engine inside the actor (``RolloutRayActor.__init__``:
``vllm.AsyncEngineArgs(*args, **kwargs)`` then ``AsyncLLMEngine.from_engine_args``), from the
keyword arguments ``create_vllm_engines`` gives the actor. :func:`profiled_actor_class` makes a
subclass of OpenRLHF's own class whose ``__init__`` adds ``profiler_config`` to those arguments,
planned by profwin-vllm for the vLLM that runs *in that actor* (``vllm.__version__`` there: it
may differ from the driver's), and then runs OpenRLHF's ``__init__`` unchanged. It also has the
method profwin's calls run in (:data:`ACTOR_METHOD`): the engine is an ``AsyncLLM``, whose calls
are coroutines, so they need an ``async def`` method (profwin-ray's contract).

An engine whose launch config cannot be planned (a vLLM older than 0.13, a spec this vLLM cannot
take) starts without one, with a warning in the actor's log: profiling never stops OpenRLHF's
engine from starting.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["ACTOR_METHOD", "launch_kwargs", "original_class", "profiled_actor_class"]

ACTOR_METHOD = "profwin_call"
"""The actor method profwin-ray's target runs its calls in."""

logger = logging.getLogger("profwin_openrlhf")


def original_class(actor_class: Any) -> type:
    """The class a Ray ``ActorClass`` was made from (``@ray.remote class RolloutRayActor``)."""
    return actor_class.__ray_metadata__.modified_class.__ray_actor_class__  # type: ignore[no-any-return]


def launch_kwargs(kwargs: dict[str, Any], settings_json: str) -> dict[str, Any]:
    """OpenRLHF's engine arguments with the ``profiler_config`` of this actor's vLLM for the
    settings' spec (``settings_json``: their JSON form, ``OpenRLHFProfiling.to_env()``); unchanged (and a warning logged) when it cannot be planned. Runs in the actor."""
    if kwargs.get("profiler_config") is not None:
        logger.warning("profwin: this engine already has a profiler_config; profwin keeps it")
        return kwargs
    try:
        import vllm
        from vllm.config import ProfilerConfig

        from profwin.plugin import backend
        from profwin_openrlhf.settings import OpenRLHFProfiling

        spec = OpenRLHFProfiling.from_dict(json.loads(settings_json)).spec_here()
        plan = backend("vllm").plan(spec, version=vllm.__version__)
        config = plan.launch.get("profiler_config")
        if config is None:
            logger.warning("profwin: vLLM %s takes no profiler_config: this engine starts unprofiled", vllm.__version__)
            return kwargs
        logger.info("profwin: vLLM %s engine with profiler_config %s (%s)", vllm.__version__, dict(config), plan.mechanism)
        return {**kwargs, "profiler_config": ProfilerConfig(**config)}
    except Exception as exc:  # the engine must start all the same
        logger.warning("profwin: this engine starts unprofiled: %s: %s", type(exc).__name__, exc)
        return kwargs


async def _call(self: Any, fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(self, *args)
    return await result if inspect.isawaitable(result) else result


def profiled_actor_class(actor_class: Any, settings_json: str) -> Any:
    """A Ray actor class like OpenRLHF's ``actor_class`` whose engine gets a profiler at launch
    and which has :data:`ACTOR_METHOD`. Needs ray (OpenRLHF's)."""
    import ray

    base = original_class(actor_class)

    async def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        await base.__init__(self, *args, **launch_kwargs(kwargs, settings_json))  # type: ignore[misc]

    # OpenRLHF's class name (logs read as before) in this module: Ray keys an actor class by module
    # and name, so OpenRLHF's own class, if a job also uses it, stays a class of its own.
    profiled = type(base.__name__, (base,), {"__init__": __init__, ACTOR_METHOD: _call, "__module__": __name__})
    return ray.remote(profiled)
