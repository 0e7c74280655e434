"""An engine object inside a Ray actor, profiled where it runs.

OpenRLHF keeps each vLLM ``AsyncLLM`` in a Ray actor (``RolloutRayActor.llm``). A trainer reaches
such an engine through :class:`ActorEngine`, an :class:`~profwin.plugin.engines.EngineTarget` whose every
call runs *in the actor*: the backend's own target for the engine object (profwin-vllm's for an
``AsyncLLM``) plans with the engine version that runs there, starts, stops, lists the output
folder and reads the traces where they were written, on the actor's node. Only the answers
travel, and then the files: when the actor runs on another node than the caller, each collected
file is copied into the caller's output folder by :func:`profwin_ray.cluster.pull` (chunked, with
the node's checksum; a file already there with that checksum, as on a shared disk, is not copied
again), and the artifacts name those copies.

How the call gets into the actor: ``method``, an actor method that runs ``fn(actor, *args)`` and
returns its result, awaiting it when it is awaitable. ``__ray_call__``, which every Ray actor has,
does for an engine whose calls are plain functions (``vllm.LLM`` in a synchronous actor); an
engine whose calls are coroutines (``AsyncLLM``) needs an ``async def`` method, so that profwin's
calls run beside the actor's event loop and the engine's coroutines on it::

    @ray.remote
    class Rollout:
        profwin_call = profwin_ray.actor_call      # or: async def profwin_call(self, fn, *args): ...
        async def __init__(self): self.llm = AsyncLLM.from_engine_args(...)

    target = profwin_ray.ActorEngine(handle, "vllm", attribute="llm", method="profwin_call")
    with profwin.remote_session("vllm", [target], spec): ...
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from profwin.plugin import Artifact, ConfigError, ProfileSpec, backend, checked, shown
from profwin.plugin.engines import EngineBusy, EnginePlan, TargetContext, TargetError
from profwin.plugin.remote import folder_listing

__all__ = ["ActorEngine", "actor_call", "in_actor"]

_STATE = "_profwin_targets"  # the actor's attribute holding each target's state between calls
_MARGIN_S = 60.0  # beyond the engine call's own timeout: the actor's queue, Ray's transport
_ERRORS: Mapping[str, type[Exception]] = {"busy": EngineBusy, "target": TargetError, "config": ConfigError}


@checked
async def actor_call(self: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """An actor method that runs ``fn(actor, *args)`` and awaits its result when it is awaitable:
    put it on an async actor's class (``profwin_call = profwin_ray.actor_call``) to reach an
    engine whose calls are coroutines with ``ActorEngine(..., method="profwin_call")``."""
    result = fn(self, *args)
    return await result if inspect.isawaitable(result) else result


def _spec_data(spec: ProfileSpec) -> dict[str, Any]:
    """A spec as plain values that cross Ray (its options are read-only mappings, which do not pickle)."""
    return {
        "window": spec.window, "activities": spec.activities, "shapes": spec.shapes, "stack": spec.stack,
        "memory": spec.memory, "flops": spec.flops, "modules": spec.modules, "output_dir": str(spec.output_dir),
        "prefix": spec.prefix, "ranks": spec.ranks, "on_unavailable": spec.on_unavailable,
        "part_steps": spec.part_steps, "part_events": spec.part_events,
        "options": {name: dict(options) for name, options in spec.options.items()},
    }  # fmt: skip


def _node_id() -> str:
    import ray

    return str(ray.get_runtime_context().get_node_id())


def in_actor(actor: Any, attribute: str, engine: str, key: str, op: str, payload: dict[str, Any]) -> Any:
    """Runs in the actor (called by ``method`` with the actor instance): one of the target's calls
    on the engine object ``actor.<attribute>``. On a running event loop (an ``async def`` actor
    method) the work runs in a thread of its own beside the loop, which the engine's coroutines
    use; otherwise here. The answer is ``{"ok": value}`` or ``{"error": kind, "message": text}``."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None:
        return _answer(lambda: _run(actor, attribute, engine, key, op, payload, None))
    running = loop

    async def off_loop() -> dict[str, Any]:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="profwin-actor") as pool:
            return await running.run_in_executor(
                pool, lambda: _answer(lambda: _run(actor, attribute, engine, key, op, payload, running))
            )

    return off_loop()


def _answer(work: Callable[[], Any]) -> dict[str, Any]:
    """The work's value, or its failure as data: a failure crosses Ray as text and a kind, never
    as an exception object (profwin's carry keyword details that do not pickle back)."""
    try:
        return {"ok": work()}
    except EngineBusy as exc:
        return {"error": "busy", "message": str(exc)}
    except TargetError as exc:
        return {"error": "target", "message": str(exc)}
    except ConfigError as exc:
        return {"error": "config", "message": str(exc)}
    except Exception as exc:
        return {"error": "target", "message": f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"}


def _run(actor: Any, attribute: str, engine: str, key: str, op: str, payload: dict[str, Any], loop: Any) -> Any:
    states: dict[str, dict[str, Any]] = actor.__dict__.setdefault(_STATE, {})
    if op == "plan":
        obj = getattr(actor, attribute, None)
        if obj is None:
            raise ConfigError(
                f"the actor ({type(actor).__name__}) holds no engine in attribute {shown(attribute)}", path="attribute"
            )
        timeout = float(payload["timeout"])
        target = backend(engine).target(obj, api_key=None, timeout=timeout)
        ctx = TargetContext(timeout=timeout, loop=loop)
        spec = ProfileSpec(**payload["spec"])
        plan = target.plan(spec, payload["version"], ctx)
        spec.replace(output_dir=plan.output_dir).prepare_output_dir()  # where the engine writes, on its node
        states[key] = {"target": target, "ctx": ctx, "plan": plan}
        return {"plan": plan.to_dict(), "node": _node_id()}
    if op == "listing":
        return folder_listing(Path(payload["output_dir"]))
    state = states.get(key)
    if state is None:
        raise TargetError("this actor has no session of this target (the actor restarted, or the target was not planned)")
    target, ctx, plan = state["target"], state["ctx"], state["plan"]
    if op == "start":
        target.start(plan, ctx)
        return None
    if op == "stop":
        return bool(target.stop(plan, ctx))
    if op == "collect":
        states.pop(key, None)
        files = [plan.output_dir / name for name in payload["names"]]
        artifacts, notes = target.collect(plan, lambda: list(files), stopped=payload["stopped"])
        return {"artifacts": list(artifacts), "notes": list(notes)}
    raise ConfigError(f"unknown operation {shown(op)}", path="op")


@checked
class ActorEngine:
    """An engine object held by a Ray actor, as an :class:`~profwin.plugin.engines.EngineTarget` (see the
    module doc): profwin's session runs every call in the actor and lists its files there.

    Args:
        actor: the actor's handle.
        engine: the backend that drives the engine object (``"vllm"``).
        attribute: the actor's attribute holding the engine object (OpenRLHF: ``llm``).
        method: the actor method that runs profwin's calls (:func:`actor_call`'s contract);
            ``__ray_call__`` does for engines whose calls are plain functions.
        name: what results and file names call this engine (default ``ray-actor:<actor id>``).
        chunk_bytes: the size of each piece of a file copied from another node.
    """

    def __init__(
        self,
        actor: Any,
        engine: str,
        *,
        attribute: str = "llm",
        method: str = "__ray_call__",
        name: str | None = None,
        chunk_bytes: int = 1 << 22,
    ) -> None:
        from profwin_ray.cluster import check_chunk_bytes

        for field, value in (("engine", engine), ("attribute", attribute), ("method", method)):
            if not (isinstance(value, str) and value.isidentifier()):
                raise ConfigError(f"must be a Python identifier (got {shown(value)})", path=field)
        self.actor = actor
        self.engine = engine
        self.attribute = attribute
        self.method = method
        actor_id = getattr(actor, "_actor_id", None)
        self.name = name or f"ray-actor:{actor_id.hex()[:16] if actor_id is not None else id(actor)}"
        self.chunk_bytes = check_chunk_bytes(chunk_bytes)  # refused here, not at the first copy
        self.timeout = 30.0
        self.node = ""
        """The node the actor runs on (known once planned)."""
        self.home: Path | None = None
        """The session's output folder on the caller's node: where files from another node go."""
        self._key = uuid.uuid4().hex

    def _call(self, op: str, payload: dict[str, Any]) -> Any:
        from profwin_ray.cluster import connect

        ray = connect(None)
        method = getattr(self.actor, self.method, None)
        if method is None:
            raise TargetError(f"the actor has no method {self.method!r} to run profwin's calls in (see profwin_ray.actor_call)")
        wait = self.timeout + _MARGIN_S
        try:
            answer = ray.get(method.remote(in_actor, self.attribute, self.engine, self._key, op, payload), timeout=wait)
        except ray.exceptions.GetTimeoutError:
            raise TargetError(f"the actor did not answer {op} within {wait:g} s") from None
        except ray.exceptions.RayError as exc:
            raise TargetError(f"{op} failed in the actor: {type(exc).__name__}: {' '.join(str(exc).split())[:500]}") from None
        if not isinstance(answer, dict) or ("ok" not in answer and "error" not in answer):
            raise TargetError(f"{self.method} returned {shown(answer)}, not profwin's answer: it must return fn(self, *args)")
        if "error" in answer:
            raise _ERRORS[answer["error"]](answer["message"])
        return answer["ok"]

    def plan(self, spec: ProfileSpec, version: str | None, ctx: TargetContext) -> EnginePlan:
        self.timeout = ctx.timeout
        self.home = spec.output_dir
        answer = self._call("plan", {"spec": _spec_data(spec), "version": version, "timeout": ctx.timeout})
        self.node = str(answer["node"])
        return EnginePlan.from_dict(answer["plan"])

    def listing(self, plan: EnginePlan) -> dict[str, tuple[int, int]]:
        found = self._call("listing", {"output_dir": str(plan.output_dir)})
        return {str(name): (int(mtime), int(size)) for name, (mtime, size) in found.items()}

    def start(self, plan: EnginePlan, ctx: TargetContext) -> None:
        self._call("start", {})

    def stop(self, plan: EnginePlan, ctx: TargetContext) -> bool:
        return bool(self._call("stop", {}))

    def collect(self, plan: EnginePlan, files: Callable[[], list[Path]], *, stopped: bool) -> tuple[list[Artifact], list[str]]:
        answer = self._call("collect", {"names": [p.name for p in files()], "stopped": stopped})
        artifacts: list[Artifact] = answer["artifacts"]
        notes: list[str] = answer["notes"]
        if not artifacts or self.home is None or self.node == _node_id():
            return artifacts, notes  # the files are on this node already
        return self._bring(artifacts, notes, self.home)

    def _bring(self, artifacts: list[Artifact], notes: list[str], home: Path) -> tuple[list[Artifact], list[str]]:
        """The artifacts' files copied from the actor's node into ``home`` on this node."""
        from profwin_ray.cluster import connect, pull

        home.mkdir(parents=True, exist_ok=True)
        result = pull(connect(None), [str(a.path) for a in artifacts], self.node, home, self.chunk_bytes)
        arrived = {f.name: f for f in result.files if f.status in ("copied", "skipped")}
        brought = []
        for artifact in artifacts:
            copy = arrived.get(artifact.path.name)
            if copy is None:
                why = next((f.message for f in result.files if f.name == artifact.path.name), result.message or "not listed")
                notes.append(
                    f"{artifact.path.name} stays on node {self.node[:8]} ({artifact.path}): it could not be copied here: {why}"
                )
                continue
            path = Path(copy.path)
            brought.append(
                Artifact(
                    path=path, steps=artifact.steps, bytes=path.stat().st_size, rank=artifact.rank, kind=artifact.kind,
                    producer=artifact.producer,
                )
            )  # fmt: skip
        return brought, notes
