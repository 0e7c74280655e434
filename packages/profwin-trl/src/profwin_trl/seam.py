"""``enable(spec, rollouts)``: TRL's vLLM generation profiled, put in place before the trainer is built.

TRL's trainers generate through ``trl.generation.vllm_generation.VLLMGeneration`` (read from TRL
1.16.0; the same seam from 1.11). Two things, each at that seam:

- colocate mode builds its in-process ``vllm.LLM`` in ``VLLMGeneration._init_vllm`` from the
  module's global ``LLM``: profwin's stand-in for it adds the ``profiler_config`` profwin-vllm plans
  for the vLLM in this process (the window at launch on vLLM < 0.32, per session from 0.32), then
  builds TRL's ``LLM`` unchanged;
- ``VLLMGeneration.generate``, called once per generation batch, opens one profiling session
  around each chosen call (rollout *k*: the *k*-th call of that object, from 0) through
  profwin-core's :class:`~profwin.plugin.RolloutProfiler`: on the colocated ``LLM`` (each training
  process its own), or in server mode on the server TRL's client talks to (or the workers of a
  router in front of it), from the main process only, the one that sends the server its requests.

Server mode needs no route of profwin's: from TRL 1.11, ``trl vllm-serve`` execs vLLM's own server
(``vllm serve``, with the arguments it does not know passed on), whose ``/start_profile`` and
``/stop_profile`` reach every worker once it is launched with ``--profiler-config`` (``profwin
args vllm --for serve``). On vLLM < 0.32 that launch config fixes the window; a server launched
for a wider one (vLLM's default: every step) records it, and profwin trims each trace to the
window, with one warning.

A TRL this was not written for (another series, or its seam missing) is left alone with one
warning: TRL runs as without profwin.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import threading
from collections.abc import Mapping
from typing import Any

from profwin.plugin import (
    EngineVersion,
    PluginError,
    ProfileSpec,
    RolloutProfiler,
    RolloutRecord,
    Window,
    backend,
    checked,
    spec_from_mapping,
    warn,
)

__all__ = ["DEFAULT_TIMEOUT", "GENERATION_MODULE", "SUPPORTED_TRL", "check_trl", "enable", "records"]

GENERATION_MODULE = "trl.generation.vllm_generation"
SUPPORTED_TRL = ((1, 11), (1, 16))
"""The first and last TRL release series profwin-trl was checked against: from 1.11 ``trl
vllm-serve`` runs vLLM's own server, and ``VLLMGeneration`` builds its ``LLM`` the same way."""
DEFAULT_TIMEOUT = 300.0
"""Seconds each call to an engine may take. A stop writes the trace (and vLLM's summary table)
before it answers, which for a server launched to record more than the window, or on a busy host,
takes far longer than a start: a stop that runs out of time loses the rollout's files, and the
generation call waits for the stop either way."""
COLOCATE_ENGINE = "colocate"
"""What results and file names call a colocated engine (vLLM adds the rank to each file)."""

_MARK = "_profwin_wrapped"
_lock = threading.Lock()
_state: dict[str, Any] = {}
_profilers: list[RolloutProfiler] = []


def records() -> list[RolloutRecord]:
    """What profiling did around each profiled generation in this process, oldest first."""
    with _lock:
        return [record for profiler in _profilers for record in profiler.records]


@checked
def check_trl(version: str | None = None) -> str:
    """The installed TRL's version when profwin-trl supports it; else a
    :class:`~profwin.PluginError` saying why (another series, or its seam missing)."""
    if version is None:
        try:
            version = importlib.metadata.version("trl")
        except importlib.metadata.PackageNotFoundError:
            raise PluginError("TRL is not installed in this environment") from None
    release = EngineVersion.parse(version, path="trl").key.release[:2]
    first, last = SUPPORTED_TRL
    if not first <= release <= last:
        raise PluginError(
            f"profwin-trl profiles TRL {first[0]}.{first[1]} to {last[0]}.{last[1]} (VLLMGeneration, and trl vllm-serve "
            f"as vLLM's own server), and TRL is {version}: its seams may differ"
        )
    try:
        module = importlib.import_module(GENERATION_MODULE)
    except Exception as exc:  # TRL missing (a version given), or its module failing to import
        missing = isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "trl"
        if missing:
            raise PluginError(
                f"TRL {version} is a version profwin-trl supports, but TRL is not installed in this environment, so its "
                f"{GENERATION_MODULE} cannot be checked: pip install 'trl>={first[0]}.{first[1]},<{last[0]}.{last[1] + 1}'"
            ) from None
        raise PluginError(f"TRL {version}'s {GENERATION_MODULE} cannot be imported: {type(exc).__name__}: {exc}") from None
    generation = getattr(module, "VLLMGeneration", None)
    if not callable(getattr(generation, "generate", None)) or not callable(getattr(generation, "_init_vllm", None)):
        raise PluginError(f"TRL {version}'s {GENERATION_MODULE} has no VLLMGeneration.generate/_init_vllm")
    if not callable(getattr(module, "LLM", None)):
        raise PluginError(f"TRL {version}'s {GENERATION_MODULE} did not import vLLM's LLM (is vLLM installed?)")
    return version


@checked
def enable(
    spec: ProfileSpec | Window | str | Mapping[str, Any],
    rollouts: object,
    *,
    router: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[str]:
    """Profile TRL's vLLM generation: ``spec`` (a spec, a window, text like ``"2:6"``, or a spec
    mapping) around the chosen ``rollouts`` (the calls of ``VLLMGeneration.generate``, from 0).
    ``router``: in server mode, profile the workers of this router (profwin's router mode)
    instead of the one server TRL talks to. ``timeout``: seconds each call to an engine may take
    (:data:`DEFAULT_TIMEOUT`). Call it before the trainer is built. Returns what was replaced,
    ``[]`` with one warning when TRL is left alone. A bad ``spec``, ``rollouts``, ``router`` or
    ``timeout`` is a :class:`~profwin.ConfigError`."""
    if isinstance(spec, Mapping):
        spec = spec_from_mapping(spec, path="spec")
    # Made now to check the arguments; each VLLMGeneration gets its own, with its engines.
    template = RolloutProfiler("vllm", spec, rollouts, engines=None if router else list, router=router, timeout=timeout)
    try:
        version = check_trl()
        return _enable(template, version)
    except Exception as exc:  # whatever went wrong, TRL must still run
        why = str(exc) if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
        warn(f"profwin-trl left TRL unprofiled: {why}", RuntimeWarning, stacklevel=2)
        return []


def _enable(template: RolloutProfiler, version: str) -> list[str]:
    module: Any = importlib.import_module(GENERATION_MODULE)
    _state["template"] = template
    replaced = []
    if "LLM" not in _state:
        _state["LLM"] = module.LLM
        module.LLM = _launching(module.LLM)
        replaced.append(f"{GENERATION_MODULE}.LLM")
    generation = module.VLLMGeneration
    if not getattr(generation.generate, _MARK, False):
        generation.generate = _profiled(generation.generate)
        replaced.append(f"{GENERATION_MODULE}.VLLMGeneration.generate")
    return replaced


def _launching(llm: Any) -> Any:
    """TRL's ``LLM`` with ``profiler_config`` added for the current spec (see the module doc)."""

    @functools.wraps(llm)
    def LLM(*args: Any, **kwargs: Any) -> Any:  # it stands for vLLM's class
        if kwargs.get("profiler_config") is None:
            config = _launch_config(_state["template"].spec)
            if config is not None:
                kwargs["profiler_config"] = config
        return llm(*args, **kwargs)

    return LLM


def _launch_config(spec: ProfileSpec) -> dict[str, Any] | None:
    """vLLM's ``profiler_config`` for ``spec`` on the vLLM in this process, or ``None`` (with a
    warning) when it has none: the engine then starts unprofiled."""
    import vllm

    try:
        plan = backend("vllm").plan_here(spec)  # type: ignore[attr-defined]  # profwin-vllm's: this process's vLLM
    except Exception as exc:
        warn(f"profwin-trl: TRL's vLLM engine starts unprofiled: {exc}", RuntimeWarning, stacklevel=4)
        return None
    config = plan.launch.get("profiler_config")
    if config is None:
        warn(
            f"profwin-trl: vLLM {vllm.__version__} takes no profiler_config: TRL's engine starts unprofiled",
            RuntimeWarning,
            stacklevel=4,
        )
        return None
    return dict(config)


def _profiled(generate: Any) -> Any:
    @functools.wraps(generate)
    def profiled(self: Any, *args: Any, **kwargs: Any) -> Any:
        chosen = _next_rollout(self)
        if chosen is None:
            return generate(self, *args, **kwargs)
        profiler, rollout_id = chosen
        with profiler.rollout(rollout_id):
            return generate(self, *args, **kwargs)

    setattr(profiled, _MARK, True)
    return profiled


def _next_rollout(generation: Any) -> tuple[RolloutProfiler, int] | None:
    """This object's profiler (made at its first call) and the id of the call about to run;
    ``None`` in server mode on a process that sends the server nothing (not the main one)."""
    if generation.mode == "server" and not generation.accelerator.is_main_process:
        return None
    with _lock:
        state = generation.__dict__.get("_profwin")
        if state is None:
            template = _state["template"]
            if generation.mode == "server" and template.router is not None:
                profiler = RolloutProfiler(
                    "vllm", template.spec, template.rollouts, router=template.router, timeout=template.timeout
                )
            else:
                profiler = RolloutProfiler(
                    "vllm",
                    template.spec,
                    template.rollouts,
                    engines=lambda: _engines(generation, template.timeout),
                    timeout=template.timeout,
                )
            _profilers.append(profiler)
            state = generation.__dict__["_profwin"] = [profiler, 0]
        rollout_id = state[1]
        state[1] += 1
        return state[0], rollout_id


def _engines(generation: Any, timeout: float) -> list[Any]:
    if generation.mode == "server":
        return [generation.vllm_client.base_url]
    target = backend("vllm").target(generation.llm, api_key=None, timeout=timeout)
    target.name = COLOCATE_ENGINE
    return [target]
