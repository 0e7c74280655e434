"""Trace tools benchmark: profwin's streaming summarize and trim on every real trace shape, against json.load + a loop, gzip and HTA.

    uv run --no-sync python benchmarks/traces_bench.py --size-mb 256 --repeat 3
    uv run --no-sync python benchmarks/traces_bench.py --size-mb 1024 --shapes vllm,gpu

Prints, in one run and side by side for every shape (``benchmarks/parts/trace_shapes.py``):
profwin's summarize and trim CPU time against ``json.load`` + a loop doing the same work (issue
34's goals: summarize >= 8x, trim >= 7x), summarize's speed in MiB of trace per CPU second,
summarize of the ``.json.gz`` against ``gzip -dc FILE > /dev/null`` (<= 1.5x the decompression
floor), and profwin's peak RSS (<= 100 MB); with ``--hta-python``, HTA loading the same trace.

1. Each shape is a real trace tiled to ``--size-mb`` (uncompressed): a block of its steps
   repeated at later times, each event's text as the producer wrote it (see trace_shapes.py):
   profwin's own torch-driver trace, a training step with Kineto's usual args, an NVIDIA H200
   trace, vLLM's and SGLang's CPU traces, and the benchmark's former synthetic shape. The torch
   templates are recorded by a child process with real torch on CPU.
2. Runs each contender in its own subprocess and reads its peak RSS from ``/proc/self/status``
   in that process and its CPU seconds from ``resource.getrusage`` (which a busy machine
   distorts less than wall time): the commands ``profwin summarize FILE`` and ``profwin trim FILE
   --window A:B -o OUT`` (``profwin.cli.main`` in the child, its text output discarded) and the
   naive way, ``json.load`` of the whole file plus a Python loop doing the same work with the
   shape's step marker. Every contender runs with Python's bytecode cache on
   (``PYTHONPYCACHEPREFIX`` in the work folder, ``PYTHONDONTWRITEBYTECODE`` unset) after one
   warm-up run of profwin on a small trace, as any run after a package's first import is:
   compiling profwin, numpy and msgspec from source would add about 0.5 CPU s to each profwin
   run and nothing to ``json.load``'s. profwin's summarize also runs without its compiled scanner
   (``PROFWIN_TRACES_NATIVE=0``: msgspec decodes the events), side by side. With ``--stdlib`` profwin also runs without its ``fast``
   extra, and with ``--parsers`` the JSON parsers considered for the reader (stdlib
   ``raw_decode`` streaming, ijson, msgspec, orjson, ``json.load``) run on each shape.

Timings are not asserted anywhere. With ``--repeat N`` the contenders run in N rounds, each
running every contender of every shape once (so that the machine's drift over minutes reaches
every contender alike), and each contender's run with the least CPU time is kept (the same for
each side: what this machine's noise, a few per cent from one run to the next, added least to).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "parts"))
from trace_shapes import SHAPES, Shape, template_path, tile  # the contenders run without these (see trace_contenders)

PARTS = Path(__file__).parent / "parts"

# For --parser-python (an interpreter without this workspace installed): core and the trace toolkit.
SOURCES = [str(Path(__file__).resolve().parents[1] / "packages" / p / "src") for p in ("profwin-core", "profwin-traces")]
GOALS = {"summarize": 8.0, "trim": 7.0, "gzip": 1.5, "rss_mb": 100.0}


def measure(name: str, *args: str, python: str = sys.executable, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one contender in a fresh interpreter; its wall time, CPU time (children included)
    and peak RSS (VmHWM: unlike ru_maxrss it does not carry over from the parent across exec)."""
    code = (
        "import re, resource, sys, time\n"
        f"sys.path[:0] = [{str(PARTS)!r}, *{SOURCES!r}]\n"
        "import trace_contenders\n"
        "t = time.perf_counter()\n"
        "msg = trace_contenders.CONTENDERS[sys.argv[1]](*sys.argv[2:])\n"
        "cpu = sum(r.ru_utime + r.ru_stime for r in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))\n"
        "hwm = int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
        "print(f'{time.perf_counter() - t:.3f}', f'{cpu:.3f}', hwm, msg, sep='\\t')\n"
    )
    # Linux carries ru_maxrss across fork+exec, so this process must stay small: it never
    # imports torch (the template is recorded in a child of its own) nor loads a trace.
    proc = subprocess.run([python, "-c", code, name, *args], capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        return {"name": name, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    seconds, cpu, rss_kib, msg = proc.stdout.strip().splitlines()[-1].split("\t")
    return {"name": name, "seconds": float(seconds), "cpu": float(cpu), "rss_mb": int(rss_kib) / 1024, "result": msg}


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Of one contender's runs, the one with the least CPU time (what the machine's noise added
    least to), with the highest peak RSS of all the runs."""
    done = [r for r in runs if "error" not in r]
    if not done:
        return runs[0]
    return dict(min(done, key=lambda r: r["cpu"]), rss_mb=max(r["rss_mb"] for r in done))


def _row(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"  {r['name']:<28} unavailable: {r['error']}"
    return f"  {r['name']:<28} {r['seconds']:>8.2f} s wall {r['cpu']:>8.2f} s cpu {r['rss_mb']:>9.1f} MB   {r['result']}"


def _templates(work: Path) -> dict[str, str]:
    """The recorded templates' paths by kind, recorded once per work folder in a child (torch)."""
    known = work / "templates" / "recorded.json"
    if known.exists():
        return dict(json.loads(known.read_text()))
    code = (
        f"import json, sys; sys.path.insert(0, {str(PARTS)!r}); import trace_shapes as s; "
        "print(json.dumps(s.record_templates(s.Path(sys.argv[1]))))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(known.parent)], capture_output=True, text=True, check=True)
    known.write_text(done.stdout.strip().splitlines()[-1])
    return dict(json.loads(known.read_text()))


def _traces(work: Path, shapes: list[Shape], size_mb: float) -> dict[str, Path]:
    """Each shape's trace of ``size_mb`` (and its ``.gz``, gzip -1), generated once per work folder."""
    recorded: dict[str, str] | None = None
    found = {}
    for shape in shapes:
        trace = work / f"{shape.name}-{size_mb:g}mb.pt.trace.json"
        if not trace.exists():
            t = time.perf_counter()
            recorded = recorded or _templates(work)
            info = tile(template_path(shape, recorded), trace, shape, size_mb=size_mb)
            print(f"generated {trace.name}: {info['bytes'] / 2**20:.0f} MiB, {info['steps']} steps, "
                  f"{info['events']:,} events in {time.perf_counter() - t:.0f} s", flush=True)  # fmt: skip
        gz = trace.with_name(trace.name + ".gz")
        if not gz.exists():
            with open(trace, "rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        found[shape.name] = trace
    return found


def _warm_up(work: Path, envs: list[dict[str, str]]) -> None:
    """One run of each profwin command per environment, on a small trace: bytecode compiled and cached."""
    warm = work / "warm-up.pt.trace.json"
    warm.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": 10.0 * k,
                                                 "dur": 5.0} for k in range(3)]}, indent=2))  # fmt: skip
    with open(warm, "rb") as src, gzip.open(str(warm) + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    for env in envs:
        measure("cli_summarize", str(warm) + ".gz", env=env)
        measure("cli_trim", str(warm), str(warm) + ".out.json", "0", "2", env=env)


def _ratio(num: dict[str, Any] | None, den: dict[str, Any] | None) -> float | None:
    return None if num is None or den is None else num["cpu"] / den["cpu"]


def _goal(value: float | None, goal: float, *, most: bool = False) -> str:
    if value is None:
        return "-"
    met = value <= goal if most else value >= goal
    return f"{value:.2f}x {'met' if met else 'NOT met'}"


def _table(shapes: list[Shape], traces: dict[str, Path], results: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """The per-shape table, in Markdown: the ratios and whether each meets its goal."""
    lines = [
        "| shape | MiB | summarize CPU s | json.load + loop CPU s | summarize vs json.load + loop (>= 8x) | MiB/s (CPU) "
        "| trim vs json.load + filter + dump (>= 7x) | .json.gz vs gzip -dc (<= 1.5x) | peak RSS (<= 100 MB) |",
        "|---|---:|---:|---:|---|---:|---|---|---|",
    ]
    for shape in shapes:
        got = {label: r for (name, label), r in results.items() if name == shape.name and "error" not in r}
        mib = traces[shape.name].stat().st_size / 2**20
        ours, naive = got.get("profwin summarize"), got.get("json.load + loop")
        summarize = _ratio(naive, ours)
        trim = _ratio(got.get("json.load + filter + dump"), got.get("profwin trim"))
        zipped = _ratio(got.get("profwin summarize .json.gz"), got.get("gzip -dc .json.gz"))
        peak = max((r["rss_mb"] for label, r in got.items() if label.startswith("profwin")), default=None)
        rss = "-" if peak is None else f"{peak:.0f} MB {'met' if peak <= GOALS['rss_mb'] else 'NOT met'}"
        lines.append(
            f"| {shape.name} | {mib:.0f} | {ours['cpu'] if ours else float('nan'):.2f} | "
            f"{naive['cpu'] if naive else float('nan'):.2f} | {_goal(summarize, GOALS['summarize'])} | "
            f"{mib / ours['cpu'] if ours else float('nan'):.0f} | {_goal(trim, GOALS['trim'])} | "
            f"{_goal(zipped, GOALS['gzip'], most=True)} | {rss} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=256, help="each shape's trace size, uncompressed (default 256)")
    parser.add_argument(
        "--shapes", default=",".join(SHAPES), help=f"comma-separated shapes to run (default all: {', '.join(SHAPES)})"
    )
    parser.add_argument("--dir", type=Path, help="where to write the traces (default: a temporary folder, removed)")
    parser.add_argument("--stdlib", action="store_true", help="also run profwin summarize without its fast extra")
    parser.add_argument("--parsers", action="store_true", help="also time the JSON parsers considered, on each shape")
    parser.add_argument(
        "--parser-python", default=sys.executable, help="interpreter for the parser runs (one with ijson/msgspec/orjson)"
    )
    parser.add_argument("--skip-naive", action="store_true", help="do not run the json.load baselines")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of every contender, each one's run with the least CPU kept (default 1)"
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run (1 MiB a shape) that only checks the script works (CI)")
    parser.add_argument(
        "--hta-python", help="interpreter with HolisticTraceAnalysis 0.5.0 (integration_tests/traces/build_hta_env.sh)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.size_mb = 1
    names = [n.strip() for n in args.shapes.split(",") if n.strip()]
    unknown = [n for n in names if n not in SHAPES]
    if unknown or not names:
        parser.error(f"--shapes: unknown {', '.join(unknown) or 'none given'}; the shapes are {', '.join(SHAPES)}")
    shapes = [SHAPES[n] for n in names]

    work = args.dir or Path(tempfile.mkdtemp(prefix="profwin-traces-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    traces = _traces(work, shapes, args.size_mb)
    # Bytecode cached, as after a package's first import (see the module docstring).
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    stdlib = {**cached, "PROFWIN_TRACES_FAST": "0"}
    typed = {**cached, "PROFWIN_TRACES_NATIVE": "0"}  # the fast extra without the compiled scanner
    _warm_up(work, [cached, typed, stdlib] if args.stdlib else [cached, typed])

    runs: list[tuple[str, str, str, tuple[str, ...], dict[str, Any]]] = []
    windows = {}
    for shape in shapes:
        trace, gz = traces[shape.name], str(traces[shape.name]) + ".gz"
        # The trims keep the middle three fifths of the steps, which one summarize run counts.
        counted = measure("cli_summarize", str(trace), env=cached)
        n_steps = int(counted["result"].split()[0]) if "error" not in counted else 100
        window = (str(n_steps // 5), str(n_steps * 4 // 5))
        windows[shape.name] = (n_steps, window)
        hta_dir = work / f"hta-{shape.name}"
        hta_dir.mkdir(exist_ok=True)
        if not (hta_dir / trace.name).exists():
            (hta_dir / trace.name).symlink_to(trace)
        one = [
            ("profwin summarize", "cli_summarize", (str(trace),), {"env": cached}),
            ("profwin summarize (msgspec)", "cli_summarize", (str(trace),), {"env": typed}),
            ("profwin summarize .json.gz", "cli_summarize", (gz,), {"env": cached}),
            ("gzip -dc .json.gz", "gzip_dc", (gz,), {"env": cached}),
            ("profwin trim", "cli_trim", (str(trace), str(work / "cli_trim.pt.trace.json"), *window), {"env": cached}),
        ]
        if args.stdlib:
            one.append(("profwin summarize (stdlib)", "cli_summarize", (str(trace),), {"env": stdlib}))
        if not args.skip_naive:
            one.append(("json.load + loop", "naive_summarize", (str(trace), shape.marker), {"env": cached}))
            out = str(work / "naive_trim.pt.trace.json")
            one.append(("json.load + filter + dump", "naive_trim", (str(trace), out, *window, shape.marker), {"env": cached}))
        if args.hta_python:
            one.append(("HTA 0.5.0 load", "hta_load", (str(hta_dir / trace.name),), {"python": args.hta_python, "env": cached}))
        runs += [(shape.name, label, name, call, kwargs) for label, name, call, kwargs in one]
    # Rounds that each run every contender once: the machine's drift over minutes reaches all
    # of them alike, not one contender's block of runs more than another's.
    samples: dict[tuple[str, str], list[dict[str, Any]]] = {(shape, label): [] for shape, label, *_ in runs}
    rounds = max(args.repeat, 1)
    for round_ in range(rounds):
        if rounds > 1:
            print(f"round {round_ + 1} of {rounds}", file=sys.stderr, flush=True)
        for shape_name, label, name, call, kwargs in runs:
            samples[(shape_name, label)].append(measure(name, *call, **kwargs))
    for path in (work / "cli_trim.pt.trace.json", work / "naive_trim.pt.trace.json"):
        path.unlink(missing_ok=True)
    results = {key: best_of(runs_of) for key, runs_of in samples.items()}
    if args.parsers:
        for shape in shapes:
            for name in ("parse_stdlib", "parse_ijson", "parse_msgspec", "parse_orjson", "parse_json_load"):
                results[(shape.name, name)] = measure(name, str(traces[shape.name]), python=args.parser_python, env=cached)

    for shape in shapes:
        n_steps, (first, last) = windows[shape.name]
        mib = traces[shape.name].stat().st_size / 2**20
        print(f"\n{shape.name}: {shape.about}\n  {mib:.0f} MiB, {n_steps} steps; trim keeps {first}:{last}")
        for (name, label), result in results.items():
            if name == shape.name:
                print(_row(dict(result, name=label)), flush=True)
        got = {label: r for (name, label), r in results.items() if name == shape.name and "error" not in r}
        if "HTA 0.5.0 load" in got and "profwin summarize" in got:
            hta = got["HTA 0.5.0 load"]["cpu"]
            print(f"  vs HTA load, CPU: summarize {hta / got['profwin summarize']['cpu']:.2f}x"
                  + (f", trim {hta / got['profwin trim']['cpu']:.2f}x" if "profwin trim" in got else "") + "  (goal >= 5x)")  # fmt: skip
        if "profwin summarize (msgspec)" in got and "profwin summarize" in got:
            print(
                f"  compiled scanner vs msgspec, CPU: {got['profwin summarize (msgspec)']['cpu'] / got['profwin summarize']['cpu']:.2f}x"
            )
        if "profwin summarize (stdlib)" in got and "profwin summarize" in got:
            print(
                f"  fast path vs stdlib path, CPU: {got['profwin summarize (stdlib)']['cpu'] / got['profwin summarize']['cpu']:.2f}x"
            )
    conditions = f"{args.size_mb:g} MiB a shape, best of {rounds} interleaved round{'s' if rounds > 1 else ''}, CPU time"
    print(f"\nper shape ({conditions}):")
    print("\n".join(_table(shapes, traces, results)))
    if not args.dir:
        shutil.rmtree(work)  # the HTA folders' links dangle once their targets are gone: not a walk of files
    return 0


if __name__ == "__main__":
    sys.exit(main())
