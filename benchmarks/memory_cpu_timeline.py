"""CPU memory timeline: profwin's compact JSON vs torch's export_memory_timeline, side by side.

A tiny decoder (4 layers, d=256, 4 heads, FFN 1024, vocab 1000; the engines-on-cpu.md toy model)
generates ``--steps`` tokens; steps ``--window`` are recorded by

* ``profwin events`` / ``profwin steps``: ``profwin.Session(profiler="memory")`` with
  ``timeline: events`` (every allocation/free) or ``timeline: steps`` (per-step totals only);
* ``export_memory_timeline``: ``torch.profiler.profile(record_shapes, profile_memory, with_stack)``
  over the same steps, then ``export_memory_timeline(path.json, device="cpu")`` (what torch offers
  on CPU; deprecated since 2.13);
* ``chrome trace``: ``profile(profile_memory=True)`` then ``export_chrome_trace`` (``.json.gz``),
  which is what vLLM writes for ``torch_profiler_with_memory``.

Printed per variant: decode time of the window's steps (recording overhead), the time to write
the file after the window (profwin: the ``step()`` that closes the window; torch: the export
call), and the file size, plus ratios against ``export_memory_timeline``. No assertions.

    uv run --no-sync python benchmarks/memory_cpu_timeline.py [--steps 264 --window 200:264 --reps 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from profwin import ProfileSpec, Session, Window
from profwin.demo import TinyDecoder, warm_up_profiler


def generate(model: TinyDecoder, steps: int, after_step: Callable[[int], None]) -> list[float]:
    """Decode ``steps`` tokens; returns each step's decode time (the hook's time excluded)."""
    model.reset()
    times = []
    with torch.inference_mode():
        token = 1
        for i in range(steps):
            started = time.perf_counter()
            token = model.decode_step(token)
            times.append(time.perf_counter() - started)
            after_step(i)
    return times


def run_profwin(model: TinyDecoder, steps: int, window: Window, out: Path, timeline: str) -> dict[str, Any]:
    spec = ProfileSpec(window=window, output_dir=out, activities=("cpu",), options={"memory": {"timeline": timeline}})
    close_s = 0.0
    with Session(spec, profiler="memory") as session:

        def after_step(i: int) -> None:
            nonlocal close_s
            started = time.perf_counter()
            session.step()
            if session.steps == window.end:
                close_s = time.perf_counter() - started

        times = generate(model, steps, after_step)
    [artifact] = session.artifacts
    return {"times": times, "write_s": close_s, "bytes": artifact.bytes, "file": artifact.path.name}


def run_torch(model: TinyDecoder, steps: int, window: Window, out: Path, kind: str) -> dict[str, Any]:
    assert window.end is not None
    if kind == "export_memory_timeline":
        prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True)
    else:
        prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)

    def after_step(i: int) -> None:
        if i + 1 == window.start:
            prof.start()
        elif i + 1 == window.end:
            prof.stop()

    times = generate(model, steps, after_step)
    path = out / ("timeline.json" if kind == "export_memory_timeline" else "trace.pt.trace.json.gz")
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # "export_memory_timeline is deprecated"
        if kind == "export_memory_timeline":
            prof.export_memory_timeline(str(path), device="cpu")
        else:
            prof.export_chrome_trace(str(path))
    return {"times": times, "write_s": time.perf_counter() - started, "bytes": path.stat().st_size, "file": path.name}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=264)
    parser.add_argument("--window", default="200:264")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="a tiny run that only checks the script works (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.window, args.reps = 12, "8:12", 1
    window = Window.parse(args.window)
    if window.end is None or window.end > args.steps:
        parser.error(f"--window must end at or before --steps ({args.steps})")
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    model = (
        TinyDecoder(vocab=128, dim=32, layers=1, heads=2) if args.smoke else TinyDecoder(vocab=1000, dim=256, layers=4, heads=4)
    )
    warm_up_profiler()
    variants: dict[str, Callable[[Path], dict[str, Any]]] = {
        "no profiler": lambda out: {"times": generate(model, args.steps, lambda i: None), "write_s": 0.0, "bytes": 0},
        "profwin events": lambda out: run_profwin(model, args.steps, window, out, "events"),
        "profwin steps": lambda out: run_profwin(model, args.steps, window, out, "steps"),
        "export_memory_timeline": lambda out: run_torch(model, args.steps, window, out, "export_memory_timeline"),
        "chrome trace": lambda out: run_torch(model, args.steps, window, out, "chrome"),
    }
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="profwin-bench-") as tmp:
        os.environ.setdefault("PROFWIN_SNAPSHOT_KEY_FILE", str(Path(tmp) / "key"))
        for rep in range(args.reps):
            for name, variant in variants.items():
                out = Path(tmp) / f"{rep}-{name.replace(' ', '_')}"
                out.mkdir()
                results[name].append(variant(out))
    print(f"torch {torch.__version__}, {args.steps} steps, window {window} ({window.length} steps), {args.reps} reps")
    print(f"{'variant':<24}{'window steps s':>16}{'write s':>10}{'file bytes':>14}{'write vs emt':>14}{'bytes vs emt':>14}")
    ref = results["export_memory_timeline"]
    ref_write = statistics.median(r["write_s"] for r in ref)
    ref_bytes = statistics.median(r["bytes"] for r in ref)
    for name, runs in results.items():
        window_s = statistics.median(sum(r["times"][window.start : window.end]) for r in runs)
        write_s = statistics.median(r["write_s"] for r in runs)
        nbytes = int(statistics.median(r["bytes"] for r in runs))
        ratio_w = f"{write_s / ref_write:.4f}x" if nbytes else "-"
        ratio_b = f"{nbytes / ref_bytes:.4f}x" if nbytes else "-"
        print(f"{name:<24}{window_s:>16.3f}{write_s:>10.3f}{nbytes:>14,d}{ratio_w:>14}{ratio_b:>14}")


if __name__ == "__main__":
    main()
