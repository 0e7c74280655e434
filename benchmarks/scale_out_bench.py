"""Scale-out benchmark: collect every node's traces then summarize them here, against summarizing
them where they are (profwin-ray), on a Ray cluster of N nodes on this machine.

    uv run --no-sync python benchmarks/scale_out_bench.py [--nodes 3] [--traces 2] [--steps 60] [--layers 100]
    uv run --no-sync python benchmarks/scale_out_bench.py --smoke      # 2 nodes, 1 small trace each

Runs itself again in the cached Ray environment (integration_tests/ray/build_env.sh, built on
first use), with profwin from this checkout. One cluster of ``--nodes`` nodes is started
(integration_tests/ray/local_cluster.py: a folder per node that only that node's processes
know); each node's engine (a torch loop under ``profwin.Session``) records ``--traces`` traces
for every n in 1..N into ``$PROFWIN_NODE_DIR/run<n>`` on the first n nodes. Then, for each n:

- (a) ``profwin_ray.collect`` of run<n> into a local folder, then ``summarize_ranks`` of the
  collected files: wall time, and bytes moved (the files' bytes);
- (b) ``profwin_ray.summarize`` of run<n> in place: wall time, and bytes moved (the pickled
  summaries that came back).

Prints one row per n and the ratios: (b)/(a) bytes (goal < 1 %) and (b)'s wall time at N nodes
over 1 node. The nodes share this machine's cores, so wall times grow with N here where real
nodes would run side by side; the bytes are what a network would carry.

The parallel shape is shown by work, not wall time: each node's in-place summaries report the
CPU seconds they took there (``Travelled.node_cpu_s``, measured in the node's task, so sharing
cores does not inflate it). On separate machines (b) takes about the largest node's share (the
``max`` column), which stays flat as N grows with M traces per node, while (a) summarizes every
trace on the caller, one after the other (its ``summarize here`` seconds, which grow with N).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAY_TESTS = ROOT / "integration_tests/ray"


def _outer(argv: list[str]) -> int:
    """Build (or reuse) the Ray environment and run the benchmark in it."""
    sys.path.insert(0, str(ROOT))
    from integration_tests.conftest import dist_info_site

    built = subprocess.run(["bash", str(RAY_TESTS / "build_env.sh")], capture_output=True, text=True, check=False)
    if built.returncode != 0:
        print(f"the Ray environment could not be built:\n{built.stderr[-3000:]}", file=sys.stderr)
        return 2
    python = Path(built.stdout.strip().splitlines()[-1]) / "bin/python"
    with tempfile.TemporaryDirectory(prefix="profwin-scale-out-") as work:
        site = dist_info_site(Path(work) / "site", "profwin-core", "profwin-traces", "profwin-ray")
        paths = [site, *(ROOT / "packages" / p / "src" for p in ("profwin-core", "profwin-traces", "profwin-ray")), RAY_TESTS]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths)), "RAY_USAGE_STATS_ENABLED": "0"}
        env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"  # workers: the Ray venv's python, not `uv run`
        env.pop("RAY_ADDRESS", None)
        return subprocess.run([str(python), __file__, "--inner", work, *argv], env=env, check=False).returncode


def _inner(args: argparse.Namespace) -> None:
    import pickle

    import ray
    from local_cluster import local_cluster

    import profwin_ray
    from profwin_ray.cluster import Travelled
    from profwin_traces import summarize_ranks

    work = Path(args.inner)
    with local_cluster(work / "nodes", nodes=args.nodes) as local:
        print(
            f"{args.nodes} Ray nodes up in {local.up_s:.1f} s; recording {args.traces} trace(s) per node per run", file=sys.stderr
        )
        for n in range(1, args.nodes + 1):
            calls = [
                local.engines[name].record.remote(
                    f"0:{args.steps}", args.steps, sub=f"run{n}", width=args.width, layers=args.layers, rank=i * args.traces + m
                )
                for i, name in enumerate(local.names[:n])
                for m in range(args.traces)
            ]
            ray.get(calls)
        rows = []
        for n in range(1, args.nodes + 1):
            pattern = f"$PROFWIN_NODE_DIR/run{n}"
            dest = work / f"collected{n}"
            began = time.perf_counter()
            collected = profwin_ray.collect(f"{pattern}/*", dest)
            here = time.perf_counter()
            local_summary = summarize_ranks(sorted(p for p in dest.glob("*/*") if not p.name.startswith(".")), top=args.top)
            a_wall = time.perf_counter() - began
            a_summarize = time.perf_counter() - here
            travelled: list[Travelled] = []
            began = time.perf_counter()
            in_place = profwin_ray.summarize([pattern], top=args.top, travelled=travelled)
            b_wall = time.perf_counter() - began
            same = len(local_summary.ranks) == len(in_place.ranks) == n * args.traces  # type: ignore[union-attr]
            rows.append(
                {
                    "nodes": n,
                    "traces": n * args.traces,
                    "a_wall_s": round(a_wall, 3),
                    "a_bytes": collected.bytes_moved,
                    "a_summarize_here_s": round(a_summarize, 3),
                    "b_wall_s": round(b_wall, 3),
                    "b_bytes": travelled[0].bytes,
                    "b_node_cpu_s": {k: round(v, 3) for k, v in sorted(travelled[0].node_cpu_s.items())},
                    "b_node_cpu_max_s": round(max(travelled[0].node_cpu_s.values()), 3),
                    "b_node_cpu_sum_s": round(sum(travelled[0].node_cpu_s.values()), 3),
                    "same_ranks": same,
                    "local_summary_pickle_bytes": len(pickle.dumps(local_summary)),
                }
            )
            shutil.rmtree(dest)
    print(
        f"{'nodes':>5} {'traces':>6} {'(a) wall s':>11} {'(a) bytes':>13} {'(b) wall s':>11} {'(b) bytes':>11} {'b/a bytes':>10}"
        f" {'(a) summarize here s':>21} {'(b) node CPU max s':>19} {'(b) node CPU sum s':>19}"
    )
    for r in rows:
        ratio = r["b_bytes"] / r["a_bytes"] if r["a_bytes"] else float("nan")
        print(
            f"{r['nodes']:>5} {r['traces']:>6} {r['a_wall_s']:>11.3f} {r['a_bytes']:>13,} {r['b_wall_s']:>11.3f} "
            f"{r['b_bytes']:>11,} {ratio:>10.3%} {r['a_summarize_here_s']:>21.3f} {r['b_node_cpu_max_s']:>19.3f}"
            f" {r['b_node_cpu_sum_s']:>19.3f}"
        )
    first, last = rows[0], rows[-1]
    n = last["nodes"]
    print(f"(b) wall time, {n} node(s) over 1: {last['b_wall_s'] / first['b_wall_s']:.2f}x for {n}x the traces (shared cores)")
    print(f"(a) wall time, {n} node(s) over 1: {last['a_wall_s'] / first['a_wall_s']:.2f}x")
    print(
        f"(b) largest node's CPU s, {n} node(s) over 1: {last['b_node_cpu_max_s'] / first['b_node_cpu_max_s']:.2f}x; "
        f"sum over nodes: {last['b_node_cpu_sum_s'] / first['b_node_cpu_sum_s']:.2f}x; "
        f"(a) summarizing here: {last['a_summarize_here_s'] / first['a_summarize_here_s']:.2f}x"
    )
    if args.json:
        print(json.dumps(rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=3, help="Ray nodes, N (default 3)")
    parser.add_argument("--traces", type=int, default=2, help="traces per node, M (default 2)")
    parser.add_argument("--steps", type=int, default=60, help="steps per trace (default 60)")
    parser.add_argument(
        "--layers", type=int, default=100, help="matmul+relu+softmax layers per step: 3 operators each (default 100)"
    )
    parser.add_argument("--width", type=int, default=64, help="matrix size of the loop each step runs (default 64)")
    parser.add_argument("--top", type=int, default=20, help="operators per summary (default 20, as profwin summarize)")
    parser.add_argument("--smoke", action="store_true", help="2 nodes, 1 small trace each: a quick end-to-end run")
    parser.add_argument("--json", action="store_true", help="also print the rows as JSON")
    parser.add_argument("--inner", metavar="WORKDIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.nodes, args.traces, args.steps, args.layers = 2, 1, 10, 20
    if args.inner:
        _inner(args)
        return 0
    return _outer([a for a in sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
