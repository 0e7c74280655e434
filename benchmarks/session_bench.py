"""Windowed vs whole-run profiling of the demo decoder, measured side by side in one process.

Decodes N steps four ways — no profiler, a whole-run torch.profiler, torch.profiler with a native
``schedule`` for the same window, and ``profwin.Session`` with that window — and prints, as ratios
to "no profiler", the wall time; trace bytes side by side; and the per-call cost of
``Session.step()`` outside the window next to an empty call and ``profile.step()`` in its NONE phase.

Then a long window (all ``--steps``) recorded two ways, each in a forked child so that each has
its own peak RSS: one trace (``part_steps: null``) and consecutive parts of ``--part-steps``
(profwin.parts). It prints the peak RSS of each, and the cost of a part boundary: the time
``Session.step()`` takes at each boundary (closing one part, exporting it, opening the next)
next to the one trace's close, per part of the same steps.

    uv run --no-sync python benchmarks/session_bench.py [--steps 1000] [--window-len 60] [--repeats 3] [--part-steps 250]

Torch's one-time profiler initialisation is paid before anything is timed, so every variant is
measured in the steady state. Each variant runs ``--repeats`` times; the median is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, schedule

import profwin
from profwin.demo import TinyDecoder, count_step_markers, warm_up_profiler
from profwin.window import MAX_STEP


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    size = fn()
    return time.perf_counter() - start, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--window-len", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--part-steps", type=int, default=0, help="part size of the long window (default: steps / 4)")
    parser.add_argument("--smoke", action="store_true", help="a tiny run that only checks the script works (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.window_len, args.repeats = 30, 5, 1
    args.part_steps = args.part_steps or max(1, args.steps // 4)
    calls = 1_000 if args.smoke else 1_000_000
    n, k = args.steps, args.window_len
    start = (n - k) // 2
    window = profwin.Window(start, start + k)
    out = Path(tempfile.mkdtemp(prefix="profwin-bench-"))
    torch.set_num_threads(1)  # steadier numbers on a shared 2-core machine
    model = TinyDecoder()
    warm_up_profiler()
    model.generate(20)  # warm the allocator and caches
    # A long window: one trace against parts, each in a child of its own (its own peak RSS),
    # forked first, while this process is small (a child starts with its parent's pages).
    # --repeats runs of each, alternating (a busy machine slows both alike); the median of each.
    runs: dict[str, list[dict[str, Any]]] = {"one": [], "parts": []}
    for i in range(args.repeats):
        runs["one"].append(in_child(lambda i=i: long_window(model, n, out / f"one{i}", part_steps=None)))
        runs["parts"].append(in_child(lambda i=i: long_window(model, n, out / f"parts{i}", part_steps=args.part_steps)))
    one, parts = (median_run(runs[key]) for key in ("one", "parts"))

    def none() -> int:
        model.generate(n)
        return 0

    def whole() -> int:
        path = out / "whole.pt.trace.json.gz"
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model.generate(n)
        prof.export_chrome_trace(str(path))
        return path.stat().st_size

    def native() -> int:
        path = out / "native.pt.trace.json.gz"
        sched = schedule(skip_first=start - 1, wait=0, warmup=1, active=k, repeat=1)
        with profile(
            activities=[ProfilerActivity.CPU], schedule=sched, on_trace_ready=lambda p: p.export_chrome_trace(str(path))
        ) as prof:
            model.generate(n, on_step=lambda _: prof.step())
        return path.stat().st_size

    recorded: list[int] = []

    def windowed() -> int:
        spec = profwin.ProfileSpec(window=window, output_dir=out / "profwin", activities=["cpu"])
        with profwin.Session(spec) as session:
            model.generate(n, on_step=lambda _: session.step())
        recorded[:] = count_step_markers(session.artifacts[0].path)
        return session.artifacts[0].bytes

    variants = {"no profiler": none, "whole-run torch.profiler": whole, "native schedule": native, "profwin.Session": windowed}
    results: dict[str, tuple[float, int]] = {}
    for name, fn in variants.items():
        runs = [timed(fn) for _ in range(args.repeats)]
        results[name] = (statistics.median(t for t, _ in runs), runs[-1][1])
    assert recorded == list(range(window.start, window.end or 0)), recorded

    # Per-call cost outside the window.
    # A window that is never reached (the last step a window may start at: MAX_STEP bounds it).
    idle = profwin.Session(profwin.ProfileSpec(window=profwin.Window(MAX_STEP - 1), output_dir=out / "idle"))
    idle.start()

    def noop() -> None:
        pass

    empty_ns = min(timeit.repeat(noop, number=calls, repeat=5)) / calls * 1e9
    step_ns = min(timeit.repeat(idle.step, number=calls, repeat=5)) / calls * 1e9
    idle_prof = profile(activities=[ProfilerActivity.CPU], schedule=schedule(skip_first=10**9, wait=0, warmup=1, active=1))
    idle_prof.start()
    prof_calls = max(calls // 10, 100)
    prof_step_ns = min(timeit.repeat(idle_prof.step, number=prof_calls, repeat=3)) / prof_calls * 1e9
    idle_prof.stop()

    base_t = results["no profiler"][0]
    whole_b = results["whole-run torch.profiler"][1]
    print(f"torch {torch.__version__}, {n} steps, window {window} ({k} steps), median of {args.repeats}, 1 intra-op thread")
    print(f"{'variant':28}{'wall s':>9}{'x no-prof':>11}{'trace bytes':>14}{'x whole-run':>13}")
    for name, (t, size) in results.items():
        ratio_b = f"{size / whole_b:.4f}" if size else "-"
        print(f"{name:28}{t:>9.3f}{t / base_t:>11.2f}{size:>14,}{ratio_b:>13}")
    print(f"profwin trace holds ProfilerStep#{recorded[0]}..#{recorded[-1]} ({len(recorded)} steps)")
    print()
    print(f"per-call cost outside the window (best of 5 x {calls:,} calls):")
    print(f"  empty Python call        {empty_ns:8.1f} ns")
    print(f"  profwin Session.step()   {step_ns:8.1f} ns   ({step_ns / empty_ns:.2f}x an empty call)")
    print(f"  torch profile.step()     {prof_step_ns:8.1f} ns   (NONE phase of a native schedule)")
    per_step_base = base_t / n * 1e9
    print(f"  one decode step          {per_step_base:8.0f} ns   (Session.step() adds {step_ns / per_step_base:.2e} of it)")

    assert one["markers"] == parts["markers"] == list(range(n)), "every step once, in one trace and across the parts"
    boundaries = len(parts["files"]) - 1
    per_part = one["close_s"] / len(parts["files"])  # the one trace's close, per part of the same steps
    # Every part is written at a boundary or at the end: beyond what writing the same steps costs.
    extra = (sum(parts["boundary_s"]) + parts["close_s"] - one["close_s"]) / max(boundaries, 1)
    boundary = statistics.median(parts["boundary_s"]) if parts["boundary_s"] else 0.0
    print()
    print(f"window 0:{n} ({n} steps): one trace vs parts of {args.part_steps} steps ({len(parts['files'])} parts)")
    print(f"{'':28}{'one trace':>12}{'parts':>12}{'parts/one':>11}")
    print(f"{'peak RSS MB':28}{one['rss_mb']:>12,.0f}{parts['rss_mb']:>12,.0f}{parts['rss_mb'] / one['rss_mb']:>11.2f}")
    print(f"{'wall s':28}{one['wall_s']:>12.3f}{parts['wall_s']:>12.3f}{parts['wall_s'] / one['wall_s']:>11.2f}")
    print(f"{'trace bytes':28}{one['bytes']:>12,}{parts['bytes']:>12,}{parts['bytes'] / one['bytes']:>11.2f}")
    print(
        f"part boundary (median of {boundaries}): {boundary * 1e3:.1f} ms, writing its part included; "
        f"the one trace's close per part of the same steps: {per_part * 1e3:.1f} ms"
    )
    print(f"cost of a boundary beyond writing its steps: {extra * 1e3:+.1f} ms ({extra / (one['wall_s'] / n):.1f} decode steps)")
    print(f"markers: {n} steps, {len(parts['markers'])} in the parts, each once")


def long_window(model: TinyDecoder, n: int, out: Path, *, part_steps: int | None) -> dict[str, Any]:
    """Record window 0:n in one trace or in parts: the time of each step() at a part boundary, and
    of the last one, which writes the window's last trace (``close_s``)."""
    spec = profwin.ProfileSpec(window=profwin.Window(0, n), output_dir=out, activities=["cpu"], part_steps=part_steps,
                               part_events=None)  # fmt: skip
    boundary_s: list[float] = []
    last = [0.0]
    started = time.perf_counter()
    with profwin.Session(spec) as session:

        def step(_: int) -> None:
            began = time.perf_counter()
            session.step()
            took = time.perf_counter() - began
            if session.steps == n:
                last[0] = took
            elif part_steps is not None and session.steps % part_steps == 0:
                boundary_s.append(took)

        model.generate(n, on_step=step)
    close_s = last[0]
    return {
        "wall_s": time.perf_counter() - started,
        "close_s": close_s,
        "boundary_s": boundary_s,
        "files": [str(a.path) for a in session.artifacts],
        "bytes": sum(a.bytes for a in session.artifacts),
        "markers": [k for a in session.artifacts for k in count_step_markers(a.path)],
    }


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median wall time, with the median of every timing and of the peak RSS."""
    chosen = dict(sorted(runs, key=lambda r: r["wall_s"])[len(runs) // 2])
    for key in ("wall_s", "close_s", "rss_mb"):
        chosen[key] = statistics.median(r[key] for r in runs)
    chosen["boundary_s"] = [statistics.median(b) for b in zip(*(r["boundary_s"] for r in runs), strict=True)]
    return chosen


def in_child(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``work()`` in a forked child; its result, and the child's peak RSS (``rss_mb``)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its result down the pipe, then exit without the parent's cleanup
        os.close(read)
        with os.fdopen(write, "w") as f:
            json.dump(work(), f)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    _, status, usage = os.wait4(pid, 0)
    assert status == 0, f"the child failed (status {status})"
    assert text, "the child wrote no result"
    return {**json.loads(text), "rss_mb": usage.ru_maxrss / 1024}


if __name__ == "__main__":
    main()
