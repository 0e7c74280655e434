"""Trace tools benchmark: profwin's streaming summarize/trim against json.load + a loop, HTA and gzip.

    uv run --no-sync python benchmarks/traces_bench.py --size-mb 1024 --hta-python ~/.cache/profwin/venvs/hta-0.5.0/bin/python

Prints, in one run, the ratios issues 15 and 20 ask for: summarize and trim CPU time against
``json.load`` + a loop (issue 20: summarize >= 8x, trim >= 7x), against HTA loading the same
trace (>= 5x), profwin's peak RSS (<= 100 MB), and summarize of the ``.json.gz`` against
``gzip -dc FILE > /dev/null`` (<= 2x the decompression floor).

1. Records a real template trace: a tiny decoder profiled by ``profwin.Session`` with the torch
   driver on CPU (``record_shapes`` on, so events carry ``Input Dims`` like a real decode trace).
2. Tiles one recorded step of it into a synthetic trace of ``--size-mb`` (uncompressed): the
   same top-level keys, metadata events and pretty-printed layout as Kineto writes, with the
   step's events repeated at shifted timestamps under ``ProfilerStep#k`` markers. Each step also
   gets a GPU-like lane: a ``cudaLaunchKernel`` runtime call on the CPU thread, a ``kernel`` on
   stream 7 of device 0 and the ``ac2g`` flow pair linking them, as a CUDA trace has.
3. Runs each contender in its own subprocess and reads its peak RSS from
   ``resource.getrusage`` in that process (CPU seconds too, which a busy machine distorts less
   than wall time): the commands ``profwin summarize FILE`` and ``profwin trim FILE --window
   A:B -o OUT`` (both streaming; ``profwin.cli.main`` in the child, its text output discarded)
   and the naive way, ``json.load`` of the whole file plus a Python loop doing the same work.
   Every contender runs with Python's bytecode cache on (``PYTHONPYCACHEPREFIX`` in the work
   folder, ``PYTHONDONTWRITEBYTECODE`` unset) after one warm-up run of profwin on a small trace,
   as any run after a package's first import is: compiling profwin, numpy and msgspec from
   source would add about 0.5 CPU s to each profwin run and nothing to ``json.load``'s.
   With ``--parsers`` it also times the JSON parsers considered for the reader (stdlib
   ``raw_decode`` streaming, ijson, msgspec, orjson, ``json.load``) on the same file, each where
   importable.

Prints seconds, peak RSS and the naive/profwin ratios. Timings are not asserted anywhere. With
``--repeat N`` the contenders run in N rounds, each running every contender once (so that the
machine's drift over minutes reaches every contender alike), and each contender's run with the
least CPU time is kept (the same for each side: what this machine's noise, a few per cent from
one run to the next, added least to).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "parts"))
from trace_contenders import STEP  # the contenders run without this script (see its module)

CORE_SRC = Path(__file__).resolve().parents[1] / "packages" / "profwin-core" / "src"  # for --parser-python
CORRELATION = re.compile(r"777000(\d{3})")
KERNEL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::_softmax", "aten::native_layer_norm", "aten::gelu")


# -- the template: one real torch trace ---------------------------------------------------------


def record_template(out_dir: Path) -> Path:
    """Profile steps 2..5 of a tiny decoder with profwin's torch driver; return the trace path."""
    import torch

    import profwin

    torch.manual_seed(0)
    dim, heads, vocab = 128, 4, 512
    embed = torch.randn(vocab, dim)
    layers = [
        {
            "qkv": torch.nn.Linear(dim, 3 * dim),
            "out": torch.nn.Linear(dim, dim),
            "up": torch.nn.Linear(dim, 4 * dim),
            "down": torch.nn.Linear(4 * dim, dim),
        }
        for _ in range(2)
    ]
    head = torch.nn.Linear(dim, vocab)
    cache: list[list[Any]] = [[torch.empty(heads, 0, dim // heads), torch.empty(heads, 0, dim // heads)] for _ in layers]

    def decode(token: int) -> int:
        f = torch.nn.functional
        x = embed[token]
        for i, layer in enumerate(layers):
            q, k, v = layer["qkv"](f.layer_norm(x, (dim,))).view(3, heads, 1, dim // heads)
            cache[i][0] = torch.cat([cache[i][0], k], dim=1)
            cache[i][1] = torch.cat([cache[i][1], v], dim=1)
            attn = f.scaled_dot_product_attention(q, cache[i][0], cache[i][1])
            x = x + layer["out"](attn.reshape(dim))
            x = x + layer["down"](f.gelu(layer["up"](f.layer_norm(x, (dim,)))))
        return int(head(f.layer_norm(x, (dim,))).argmax())

    spec = profwin.ProfileSpec(
        window=profwin.Window(2, 5), output_dir=out_dir, shapes=True, options={"torch": {"format": "json"}}
    )
    token = 1
    with torch.inference_mode(), profwin.Session(spec) as session:
        for _ in range(6):
            token = decode(token)
            session.step()
    return session.artifacts[0].path


# -- tiling it into a big synthetic trace ---------------------------------------------------------


def _render(event: dict[str, Any]) -> str:
    """One event as Kineto lays it out (two-space indent inside the traceEvents array)."""
    return "\n  ".join(json.dumps(event, indent=2).splitlines())


def _as_format(event: dict[str, Any]) -> str:
    """The event rendered with its ``ts`` replaced by a ``{ts}`` slot (and ``{step}`` in markers)."""
    event = dict(event, ts=0.5)  # a sentinel that cannot occur in a real timestamp rendering
    text = _render(event).replace("{", "{{").replace("}", "}}").replace('"ts": 0.5', '"ts": {ts:.3f}')
    text = CORRELATION.sub(r"1{step:06d}\1", text)  # a flow id unique to this step
    return STEP.sub("ProfilerStep#{step}", text)


def _gpu_lane(op: dict[str, Any], correlation: int) -> list[dict[str, Any]]:
    """A cudaLaunchKernel inside ``op``, the kernel it launches on stream 7, and their flow pair.

    ``correlation`` is rendered as ``777000nnn``, a sentinel that :func:`_as_format` makes unique
    per step."""
    correlation += 777000000
    launch_ts = op["ts"] + op.get("dur", 0.0) / 2
    kernel_ts = launch_ts + 40.0
    name = "void at::native::" + op["name"].split("::")[-1] + "_kernel<float, 128, 4>(float const*, float*, int)"
    args = {"correlation": correlation, "device": 0, "stream": 7}
    return [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": op["pid"], "tid": op["tid"],
         "ts": launch_ts, "dur": 4.2, "args": {"cbid": 211, "correlation": correlation}},
        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": kernel_ts, "dur": 11.5,
         "args": dict(args, grid=[108, 1, 1], block=[128, 1, 1], **{"registers per thread": 32})},
        {"ph": "s", "id": correlation, "pid": op["pid"], "tid": op["tid"], "ts": launch_ts, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": correlation, "pid": 0, "tid": 7, "ts": kernel_ts, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    ]  # fmt: skip


def generate(template: Path, out: Path, *, size_mb: float) -> dict[str, Any]:
    """Write a ~``size_mb`` trace tiled from the first recorded step of ``template``."""
    opener: Any = gzip.open if template.name.endswith(".gz") else open
    with opener(template, "rt", encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    markers = sorted((e for e in events if e.get("ph") == "X" and STEP.fullmatch(str(e.get("name")))), key=lambda e: e["ts"])
    first = markers[0]
    start, period = first["ts"], markers[1]["ts"] - first["ts"]
    in_step = [e for e in events if e.get("ph") != "M" and start <= e.get("ts", -1.0) < start + period]
    gpu = [lane for n, e in enumerate(e for e in in_step if e.get("name") in KERNEL_OPS) for lane in _gpu_lane(e, n)]
    metadata = [e for e in events if e.get("ph") == "M"]
    metadata += [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
    ]
    sections = [[(_as_format(e), e["ts"] - start) for e in part] for part in (in_step, gpu)]
    step_bytes = sum(len(text) + 8 for part in sections for text, _ in part)  # + separators and ts digits, roughly
    steps = max(2, int(size_mb * 2**20 / step_bytes))

    head = {k: v for k, v in trace.items() if k != "traceEvents"}
    keys = list(trace)
    before = {k: head[k] for k in keys[: keys.index("traceEvents")]}
    after = {k: head[k] for k in keys[keys.index("traceEvents") + 1 :]}
    tmp = out.with_name(out.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(before, indent=2)[:-2] + ',\n  "traceEvents": [\n  ')
        f.write(",\n  ".join(_render(e) for e in metadata))
        # Kineto's order: all host operators (sorted by start), then all CUPTI activities.
        for slots in sections:
            for step in range(steps):
                base = start + step * period
                f.write(",\n  ")
                f.write(",\n  ".join(fmt.format(ts=base + offset, step=step) for fmt, offset in slots))
        f.write("\n  ]," + json.dumps(after)[1:] + "\n")
    tmp.replace(out)
    return {"steps": steps, "events": len(metadata) + steps * (len(in_step) + len(gpu)), "bytes": out.stat().st_size}


def measure(name: str, *args: str, python: str = sys.executable, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one contender in a fresh interpreter; its wall time, CPU time (children included)
    and peak RSS (VmHWM: unlike ru_maxrss it does not carry over from the parent across exec)."""
    code = (
        "import re, resource, sys, time\n"
        f"sys.path[:0] = [{str(Path(__file__).parent / 'parts')!r}, {str(CORE_SRC)!r}]\n"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=1024, help="synthetic trace size, uncompressed (default 1024)")
    parser.add_argument("--dir", type=Path, help="where to write the traces (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--parsers", action="store_true", help="also time the JSON parsers considered")
    parser.add_argument(
        "--parser-python", default=sys.executable, help="interpreter for the parser runs (one with ijson/msgspec/orjson)"
    )
    parser.add_argument("--skip-naive", action="store_true", help="do not run the json.load baselines")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of every contender, the one with the least CPU kept (default 1)"
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run (2 MiB) that only checks the script works (CI)")
    parser.add_argument(
        "--hta-python", help="interpreter with HolisticTraceAnalysis 0.5.0 (integration_tests/traces/build_hta_env.sh)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.size_mb = 2

    work = args.dir or Path(tempfile.mkdtemp(prefix="profwin-traces-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    trace = work / f"synthetic-{int(args.size_mb)}mb.pt.trace.json"
    if not trace.exists():
        t = time.perf_counter()
        code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import traces_bench as b; print(b.record_template(b.Path(sys.argv[1])))"
        recorded = subprocess.run(
            [sys.executable, "-c", code, str(work / "template")], capture_output=True, text=True, check=True
        )
        template = Path(recorded.stdout.strip().splitlines()[-1])
        info = generate(template, trace, size_mb=args.size_mb)
        print(f"generated {trace}: {info['bytes'] / 2**20:.0f} MiB, {info['steps']} steps, {info['events']:,} events "
              f"in {time.perf_counter() - t:.0f} s")  # fmt: skip
    else:
        print(f"reusing {trace} ({trace.stat().st_size / 2**20:.0f} MiB)")

    gz = trace.with_name(trace.name + ".gz")
    if not gz.exists():
        with open(trace, "rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    hta_dir = work / "hta"
    hta_dir.mkdir(exist_ok=True)
    hta_trace = hta_dir / trace.name
    if not hta_trace.exists():
        hta_trace.symlink_to(trace)
    # Bytecode cached, as after a package's first import (see the module docstring).
    cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    stdlib = {**cached, "PROFWIN_TRACES_FAST": "0"}
    warm = work / "warm-up.pt.trace.json"
    warm.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": 10.0 * k,
                                                 "dur": 5.0} for k in range(3)]}, indent=2))  # fmt: skip
    with open(warm, "rb") as src, gzip.open(str(warm) + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    for env in (cached, stdlib):
        for name, call in (
            ("cli_summarize", (str(warm) + ".gz",)),
            ("cli_trim", (str(warm), str(warm) + ".out.json", "0", "2")),
        ):
            measure(name, *call, env=env)

    # The trims keep the middle three fifths of the steps, which one summarize run counts.
    counted = measure("cli_summarize", str(trace), env=cached)
    n_steps = int(counted["result"].split()[0]) if "error" not in counted else 100
    first, last = n_steps // 5, n_steps * 4 // 5
    window = (str(first), str(last))
    runs: list[tuple[str, str, tuple[str, ...], dict[str, Any]]] = [
        ("profwin summarize", "cli_summarize", (str(trace),), {"env": cached}),
        ("profwin summarize (stdlib)", "cli_summarize", (str(trace),), {"env": stdlib}),
        ("profwin summarize .json.gz", "cli_summarize", (str(gz),), {"env": cached}),
        ("gzip -dc .json.gz", "gzip_dc", (str(gz),), {"env": cached}),
    ]
    if not args.skip_naive:
        runs.append(("json.load + loop", "naive_summarize", (str(trace),), {"env": cached}))
    if args.hta_python:
        runs.append(("HTA 0.5.0 load", "hta_load", (str(hta_trace),), {"python": args.hta_python, "env": cached}))
    runs.append(("profwin trim", "cli_trim", (str(trace), str(work / "cli_trim.pt.trace.json"), *window), {"env": cached}))
    if not args.skip_naive:
        out = str(work / "naive_trim.pt.trace.json")
        runs.append(("json.load + filter + dump", "naive_trim", (str(trace), out, *window), {"env": cached}))
    # Rounds that each run every contender once: the machine's drift over minutes reaches all
    # of them alike, not one contender's block of runs more than another's.
    samples: dict[str, list[dict[str, Any]]] = {label: [] for label, *_ in runs}
    rounds = max(args.repeat, 1)
    for round_ in range(rounds):
        if rounds > 1:
            print(f"round {round_ + 1} of {rounds}", file=sys.stderr, flush=True)
        for label, name, call, kwargs in runs:
            samples[label].append(measure(name, *call, **kwargs))
    for path in (work / "cli_trim.pt.trace.json", work / "naive_trim.pt.trace.json"):
        path.unlink(missing_ok=True)
    results = {label: best_of(runs_of) for label, runs_of in samples.items()}
    for label, result in results.items():
        print(_row(dict(result, name=label)), flush=True)
    if args.parsers:
        for name in ("parse_stdlib", "parse_ijson", "parse_msgspec", "parse_orjson", "parse_json_load"):
            results[name] = measure(name, str(trace), python=args.parser_python, env=cached)
            print(_row(dict(results[name], name=name)), flush=True)

    ok = {k: r for k, r in results.items() if "error" not in r}
    print(f"\ntrace: {trace.stat().st_size / 2**20:.0f} MiB ({gz.stat().st_size / 2**20:.0f} MiB gzip -1), "
          f"{n_steps} steps; trim keeps {first}:{last}" + (f"; best of {args.repeat} runs each" if args.repeat > 1 else ""))  # fmt: skip
    ours, ours_trim = ok.get("profwin summarize"), ok.get("profwin trim")
    if ours and "json.load + loop" in ok:
        print(f"1. vs json.load + loop, CPU: summarize {ok['json.load + loop']['cpu'] / ours['cpu']:.2f}x"
              + (f", trim {ok['json.load + filter + dump']['cpu'] / ours_trim['cpu']:.2f}x" if ours_trim and "json.load + filter + dump" in ok else "")
              + "  (goal: summarize >= 8x, trim >= 7x)")  # fmt: skip
    if ours and "HTA 0.5.0 load" in ok:
        print(f"2. vs HTA load, CPU: summarize {ok['HTA 0.5.0 load']['cpu'] / ours['cpu']:.2f}x"
              + (f", trim {ok['HTA 0.5.0 load']['cpu'] / ours_trim['cpu']:.2f}x" if ours_trim else "") + "  (goal >= 5x)")  # fmt: skip
    if ours:
        peak = max(r["rss_mb"] for k, r in ok.items() if k.startswith("profwin"))
        print(f"3. peak RSS of profwin: {peak:.0f} MB  (goal <= 100 MB)")
    if "profwin summarize .json.gz" in ok and "gzip -dc .json.gz" in ok:
        mine, floor = ok["profwin summarize .json.gz"], ok["gzip -dc .json.gz"]
        print(f"4. summarize .json.gz / gzip -dc: wall {mine['seconds'] / floor['seconds']:.2f}x, "
              f"CPU {mine['cpu'] / floor['cpu']:.2f}x  (goal <= 2x)")  # fmt: skip
    if "profwin summarize (stdlib)" in ok and ours:
        print(f"   fast path vs stdlib path, CPU: {ok['profwin summarize (stdlib)']['cpu'] / ours['cpu']:.2f}x")
    if not args.keep and not args.dir:
        shutil.rmtree(work)  # the HTA folder's link dangles once its target is gone: not a walk of files
    return 0


if __name__ == "__main__":
    sys.exit(main())
