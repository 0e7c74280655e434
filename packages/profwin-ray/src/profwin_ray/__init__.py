"""profwin-ray: a profiling session's files from every Ray node, and summaries where the traces are.

::

    import profwin_ray

    result = profwin_ray.collect("/tmp/profwin/*.json.gz", "traces/")   # -> traces/<node>/<file>
    summary = profwin_ray.summarize(["/tmp/profwin"])                   # only summaries travel
    target = profwin_ray.ActorEngine(handle, "vllm", attribute="llm", method="profwin_call")

``profwin collect --ray`` is this distribution's command (:mod:`profwin_ray.commands`, through the
``profwin.commands`` entry point); ``profwin summarize --ray`` (profwin-traces) reaches this module
through the ``profwin.clusters`` entry point (``profwin_ray._plugin.PLUGIN``, whose target is
:class:`RayCluster`), and so do trainer integrations whose engines live in Ray actors
(``profwin.plugin.cluster("ray").engine_target(...)``: :class:`ActorEngine`).
Importing it does not import ray: that happens on the first call (which connects to the
cluster, or uses this process's connection).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profwin.plugin import ConfigError, checked, lazy_exports

if TYPE_CHECKING:
    from profwin_ray.actors import ActorEngine, actor_call
    from profwin_ray.cluster import Collection

__all__ = ["ActorEngine", "RayCluster", "actor_call", "collect", "deliver", "summarize"]


@checked
def collect(pattern: str, dest: str | Path, **options: Any) -> Collection:
    """See :func:`profwin_ray.cluster.collect`."""
    from profwin_ray.cluster import collect as run

    return run(pattern, dest, **options)


@checked
def summarize(paths: Sequence[str], **options: Any) -> Any:
    """See :func:`profwin_ray.cluster.summarize`."""
    from profwin_ray.cluster import summarize as run

    return run(paths, **options)


@checked
def deliver(paths: Sequence[str | Path], dest: str | Path, **options: Any) -> Any:
    """See :func:`profwin_ray.cluster.deliver`."""
    from profwin_ray.cluster import deliver as run

    return run(paths, dest, **options)


class RayCluster:
    """The :class:`profwin.plugin.Cluster` that ``profwin collect --ray`` and ``profwin summarize
    --ray`` use (the target of :data:`profwin_ray._plugin.PLUGIN`, made once per process by
    ``profwin.plugin.cluster("ray")``)."""

    def collect(
        self, pattern: str, dest: Path, *, address: str | None = None, chunk_bytes: int = 1 << 22, progress: bool = False
    ) -> Collection:
        return collect(pattern, dest, address=address, chunk_bytes=chunk_bytes, progress=progress)

    def summarize(
        self,
        paths: Sequence[str],
        *,
        address: str | None = None,
        window: Any = None,
        top: int = 20,
        first_step: int | None = None,
        session: str | None = None,
    ) -> Any:
        return summarize(paths, address=address, window=window, top=top, first_step=first_step, session=session)

    def deliver(self, paths: Sequence[str | Path], dest: str | Path) -> list[str]:
        """Copy this node's ``paths`` into ``dest`` on the head node; the paths there that
        arrived (raises :class:`profwin.plugin.ConfigError` naming those that did not)."""
        result = deliver(paths, dest)
        failed = [f"{f.name}: {f.message}" for f in result.files if f.status not in ("copied", "skipped")]
        if failed or result.message:
            raise ConfigError(f"could not deliver to the head node: {result.message or '; '.join(failed)}", path="deliver")
        return [f.path for f in result.files]

    def engine_target(self, actor: Any, engine: str, **options: Any) -> ActorEngine:
        """The engine object an actor holds, as a target whose calls run in the actor (see
        :class:`ActorEngine` for ``options``: ``attribute``, ``method``, ``name``, ``chunk_bytes``)."""
        from profwin_ray.actors import ActorEngine

        return ActorEngine(actor, engine, **options)


__getattr__, __dir__ = lazy_exports(__name__, {"profwin_ray.actors": ("ActorEngine", "actor_call")})
