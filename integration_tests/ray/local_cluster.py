"""A Ray cluster of several nodes on this machine, each with a folder of its own (used by
``cluster_checks.py`` and ``benchmarks/scale_out_bench.py``; runs in the cached Ray environment).

Nodes on one machine share its file system. Each node here is started with ``PROFWIN_NODE_DIR``
set in its raylet's environment, which every worker on that node inherits and no other process
has: a path written ``$PROFWIN_NODE_DIR/...`` (profwin-ray expands it on each node) names that
node's own folder, so "only this node holds the file" is true for everything that goes through
profwin-ray. :class:`Engine` is a node's engine: a torch decode-like loop under
``profwin.Session``, pinned to the node as a Ray actor.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from attrs import define

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # integration_tests/readiness.py
import readiness


class Engine:
    """A node's engine (a Ray actor): traces from a real torch loop, and files of given sizes."""

    def __init__(self, rank: int) -> None:
        os.environ["RANK"] = str(rank)
        self.dir = Path(os.environ["PROFWIN_NODE_DIR"])

    def record(
        self,
        window: str,
        steps: int,
        sub: str = "traces",
        width: int = 64,
        layers: int = 8,
        rank: int | None = None,
        part_steps: int | None = 1000,
    ) -> list[str]:
        import torch

        import profwin

        spec = profwin.ProfileSpec(
            window=profwin.Window.parse(window), output_dir=self.dir / sub, activities=("cpu",), ranks="all",
            part_steps=part_steps,
        )  # fmt: skip
        with profwin.Session(spec, rank=rank) as session:
            for _ in range(steps):
                x = torch.randn(width, width)
                for _ in range(layers):
                    x = x.matmul(x).relu().softmax(-1)
                session.step()
        return [a.path.name for a in session.artifacts]

    def write(self, name: str, size: int, sub: str = "big") -> str:
        path = self.dir / sub / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
        return str(path)

    def remove(self, name: str, sub: str = "big") -> None:
        (self.dir / sub / name).unlink()

    def append(self, name: str, size: int, sub: str = "big") -> None:
        with open(self.dir / sub / name, "ab") as f:
            f.write(os.urandom(size))

    def link(self, name: str, target: str, sub: str = "links") -> None:
        """A symbolic link ``name`` in this node's ``sub`` folder, to ``target``."""
        (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / sub / name).symlink_to(target)

    # A hold (node_site/sitecustomize.py): this node's reads of a file past its first chunk wait
    # until the test lets them go, so a fault lands while the copy is provably under way.

    def hold(self, name: str, sub: str = "big") -> None:
        os.mkfifo(self.dir / sub / f".{name}.hold")

    def wait_held(self, name: str, sub: str = "big") -> None:
        """Return once a read of ``name`` waits at the hold (it has opened the FIFO)."""
        self._held = open(self.dir / sub / f".{name}.hold", "wb")  # noqa: SIM115 (closed by release)

    def release(self, name: str, sub: str = "big") -> None:
        (self.dir / sub / f".{name}.hold").unlink()
        self._held.close()

    def deliver(self, name: str, dest: str, sub: str = "traces") -> dict[str, Any]:
        """What a rollout replica's relocation does with the switch on: this node's file, into
        ``dest`` on the head node."""
        import profwin_ray

        result = profwin_ray.deliver([self.dir / sub / name], dest)
        return result.to_dict()  # type: ignore[no-any-return]

    def relocate(self, save_path: str, name: str) -> list[str]:
        """verl's relocation on this replica (rank 1) with ``PROFWIN_VERL_DELIVER=ray``: this
        node's trace ``name`` as the engine left it, moved into ``save_path`` and delivered to
        the head node."""
        import shutil

        from profwin_verl import relocate_rollout_traces, rollout_trace_dir

        config = {"tool": "torch", "enable": True, "save_path": save_path, "relocate_results": True}
        engine_dir = Path(rollout_trace_dir(config, 1))
        engine_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(self.dir / "traces" / name, engine_dir / name)
        os.environ["PROFWIN_VERL_DELIVER"] = "ray"
        try:
            return relocate_rollout_traces(config, 1)
        finally:
            del os.environ["PROFWIN_VERL_DELIVER"]

    def sessions(self, sub: str) -> dict[str, str | None]:
        """Each trace in this node's ``sub`` folder and the session id its provenance names."""
        from profwin_traces import trace_facts

        return {p.name: trace_facts(p).session for p in sorted((self.dir / sub).glob("*.json*"))}

    def where(self) -> str:
        return str(self.dir)


@define
class LocalCluster:
    """The running cluster: ``names`` (``head``, ``n1``, ...), their Ray node handles, ids, the
    folder each owns, the label profwin-ray files their collected files under, and an
    :class:`Engine` actor pinned to each."""

    cluster: Any
    names: list[str]
    handles: dict[str, Any]
    node_ids: dict[str, str]
    dirs: dict[str, Path]
    labels: dict[str, str]
    engines: dict[str, Any]
    up_s: float


@contextmanager
def local_cluster(root: Path, nodes: int = 3) -> Iterator[LocalCluster]:
    """A head and ``nodes - 1`` more, one CPU each, this process connected as the driver."""
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from profwin_ray.cluster import _alive_nodes

    began = time.monotonic()
    names = ["head", *(f"n{i}" for i in range(1, nodes))]
    dirs = {n: root / n for n in names}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    readiness.patient_ray()  # a loaded machine: Ray's node start waits as long as the node needs
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "env_vars": {"PROFWIN_NODE_DIR": str(dirs["head"])}})
    try:
        handles = {"head": cluster.head_node}
        for n in names[1:]:
            handles[n] = cluster.add_node(num_cpus=1, env_vars={"PROFWIN_NODE_DIR": str(dirs[n])})
        cluster.wait_for_nodes(timeout=readiness.RAY_NODE_START_S)
        ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
        node_ids = {n: handles[n].node_id for n in names}
        by_id = {node_id: label for label, node_id in _alive_nodes(ray)}
        engine_cls = ray.remote(num_cpus=0)(Engine)
        engines = {
            n: engine_cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_ids[n], soft=False)).remote(rank)
            for rank, n in enumerate(names)
        }
        yield LocalCluster(
            cluster, names, handles, node_ids, dirs, {n: by_id[node_ids[n]] for n in names}, engines, time.monotonic() - began
        )
    finally:
        ray.shutdown()
        cluster.shutdown()
