"""Reading a CPU memory timeline: profwin's streaming reader against json.load + a loop, and its refusals.

    uv run --no-sync python benchmarks/memory_timeline_bench.py [--size-mb 250] [--repeat 1] [--dir DIR]

Prints, in one run and side by side (issue 35's goals: >= 5x faster than ``json.load`` + a loop,
peak RSS <= 100 MB at any size, every refusal within 2 s of reaching its bound):

1. A valid timeline of ``--size-mb`` MB, as ``profwin_memory.cpu_timeline`` writes it (its
   ``events`` columns filled with a seeded random workload: 8 steps, 40 ops, allocations and
   frees of 64 B to 4 MiB), as ``.json`` and ``.json.gz`` (gzip level 1).
2. On each: ``profwin_memory.summarize_timeline`` (what ``profwin-memory summarize`` runs; every
   value checked, see ``profwin_memory.timeline``), the same with the ``fast`` extra off
   (``PROFWIN_TRACES_FAST=0``: the standard library only), and the naive way: ``json.load`` of the
   whole file and a Python loop doing the same checks (each value's type and range, the columns'
   lengths). Each runs in its own interpreter, which reports its CPU seconds for the read
   (``resource.getrusage``) and its peak RSS (``VmHWM``, the interpreter's own ~30 MB included:
   not ``ru_maxrss``, which counts the forked copy of this process before the child's exec; the
   "interpreter" row is a child that only imports profwin_memory).
3. The refusals: a whitespace flood (``MAX_TIMELINE_BYTES`` + 1 MiB of spaces after ``{``, a
   plain file), a column bomb (gzip: a timeline whose ``events.t_us`` column of zeros goes on to
   300 MiB decompressed, 0.3 MiB on disk) and a zero-byte bomb (gzip: 300 MiB of zero bytes in
   the first string): the time to the error, all of it spent before the bound is reached (the
   read that crosses it is refused), and the peak RSS.

Timings are not asserted anywhere. With ``--repeat N`` each contender's least CPU time of N runs
is kept. ``--smoke`` (CI) reads a 2 MB timeline and lowers the limit to 4 MiB in the children,
so the refusals stay small.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

MIB = 1 << 20
STEPS = (100, 108)

# One contender's child: read FILE (argv[1]) the way argv[2] says; print one JSON line.
CHILD = r"""
import json, resource, sys, time
path, how, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
import profwin_memory.timeline as timeline
from profwin_memory import summarize_timeline
if limit:
    timeline.MAX_TIMELINE_BYTES = limit
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def naive(path):
    import gzip, math
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = json.load(f)
    steps = [int(x) for x in data["steps"].split(":")]
    for name, value in data["totals"].items():
        assert value is None or type(value) is int and value >= 0, name
    ops = len(data["ops"])
    assert all(type(op) is str for op in data["ops"])
    columns = data["events"]
    n = len(columns["t_us"])
    for name, column in columns.items():
        assert len(column) == n, name
    for t in columns["t_us"]:
        assert type(t) in (int, float) and math.isfinite(t) and t >= 0
    for s in columns["step"]:
        assert type(s) is int and steps[0] <= s < steps[1]
    for b in columns["bytes"]:
        assert type(b) is int
    for v in columns["live_bytes"]:
        assert type(v) is int and v >= 0
    for o in columns["op"]:
        assert type(o) is int and 0 <= o < ops
    for name, column in data["per_step"].items():
        for v in column:
            assert type(v) is int and v >= 0, name
    return {"events": n}
started, wall = cpu(), time.perf_counter()
error = ""
try:
    if how == "naive":
        result = naive(path)
    elif how == "import":
        result = {}
    else:
        result = {"events": summarize_timeline(path)["events"]}
except Exception as exc:
    result, error = {}, f"{type(exc).__name__}: {exc}"
# VmHWM, not ru_maxrss: ru_maxrss outlives exec, so it would count the forked copy of a big parent.
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"cpu_s": cpu() - started, "wall_s": time.perf_counter() - wall, "rss_mb": hwm / 1024,
                  "error": error[-300:], **result}))
"""


def measure(path: Path, how: str, *, limit: int = 0, stdlib: bool = False) -> dict[str, Any]:
    """One contender's run in a fresh interpreter: its CPU s, wall s and peak RSS for the read."""
    env = {**__import__("os").environ, "PROFWIN_TRACES_FAST": "0" if stdlib else "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), how, str(limit)], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{how} on {path} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def best(path: Path, how: str, repeat: int, **kwargs: Any) -> dict[str, Any]:
    return min((measure(path, how, **kwargs) for _ in range(repeat)), key=lambda r: r["cpu_s"])


def write_timeline(path: Path, size: int) -> int:
    """A valid timeline of about ``size`` bytes; its number of events. Written a block of events at
    a time, each column to its own file first, so that this process stays small."""
    rng = random.Random(35)
    ops = [f"aten::op_{i}" for i in range(40)]
    n = size // 36  # bytes of JSON per event, all five columns together
    names = ("t_us", "step", "bytes", "live_bytes", "op")
    parts = [path.with_name(f"{path.name}.{name}") for name in names]
    files = [part.open("w") for part in parts]
    held: list[int] = []
    total = peak = 0
    for block in range(0, n, 1 << 16):
        rows: tuple[list[Any], ...] = ([], [], [], [], [])
        for i in range(block, min(n, block + (1 << 16))):
            if held and rng.random() < 0.45:
                nbytes = -held.pop(rng.randrange(len(held)))
            else:
                nbytes = 64 << rng.randrange(17)
                held.append(nbytes)
            total += nbytes
            peak = max(peak, total)
            for column, value in zip(
                rows,
                (round(i * 0.7, 1), STEPS[0] + i * (STEPS[1] - STEPS[0]) // n, nbytes, total, rng.randrange(len(ops))),
                strict=True,
            ):
                column.append(value)
        for f, column in zip(files, rows, strict=True):
            f.write(("," if block else "") + ",".join(map(str, column)))
    for f in files:
        f.close()
    zeros = [0] * (STEPS[1] - STEPS[0])
    head = {
        "format": "profwin.memory-timeline",
        "version": 1,
        "device": "cpu",
        "steps": f"{STEPS[0]}:{STEPS[1]}",
        "units": {"bytes": "bytes", "t_us": "microseconds from the start of the first step"},
        "totals": {
            "alloc_bytes": 0, "alloc_count": 0, "free_bytes": 0, "free_count": 0, "peak_live_bytes": peak,
            "peak_step": STEPS[0], "end_live_bytes": total, "outside_steps": 0, "frees_of_older_blocks": 0,
        },
        "per_step": {"step": list(range(*STEPS)), **dict.fromkeys(
            ("alloc_bytes", "alloc_count", "free_bytes", "free_count", "peak_live_bytes", "end_live_bytes"), zeros)},
        "top_ops": [{"op": ops[0], "alloc_bytes": 0, "alloc_count": 0}],
        "ops": ops,
    }  # fmt: skip
    with path.open("w") as out:
        out.write(json.dumps(head, separators=(",", ":"))[:-1] + ',"events":{')
        for k, (name, part) in enumerate(zip(names, parts, strict=True)):
            out.write(f'{"," * (k > 0)}"{name}":[')
            with part.open() as f:
                shutil.copyfileobj(f, out, 1 << 20)
            out.write("]")
            part.unlink()
        out.write('},"window":"100:108","rank":0,"pid":4242,"torch":"2.13.0+cpu"}')
    return n


def write_flood(path: Path, size: int) -> None:
    with path.open("w") as f:
        f.write("{")
        for _ in range(size // MIB):
            f.write(" " * MIB)


def write_zeros(path: Path, size: int) -> None:
    """The issue's gzip bomb: zero bytes inside the first string."""
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b'{"format":"')
        for _ in range(size // MIB):
            f.write(bytes(MIB))


def write_bomb(path: Path, size: int) -> None:
    zeros = b"0," * (MIB // 2)
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b'{"format":"profwin.memory-timeline","version":1,"steps":"100:108","events":{"t_us":[')
        for _ in range(size // MIB):
            f.write(zeros)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=250.0, help="the valid timeline's size, MB (10**6 bytes)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per contender; the least CPU time is kept")
    parser.add_argument("--dir", type=Path, help="where the files go (default: a temporary folder)")
    parser.add_argument("--smoke", action="store_true", help="a 2 MB timeline and a 4 MiB limit: checks the script works (CI)")
    args = parser.parse_args()
    size = int((2.0 if args.smoke else args.size_mb) * 1e6)
    limit = 4 * MIB if args.smoke else 0
    from profwin_memory.timeline import MAX_TIMELINE_BYTES

    bound = limit or MAX_TIMELINE_BYTES
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        plain = folder / "big.memory_timeline.json"
        events = write_timeline(plain, size)
        packed = folder / "big.memory_timeline.json.gz"
        packed.write_bytes(gzip.compress(plain.read_bytes(), compresslevel=1))
        print(f"timeline: {events:,} events, {plain.stat().st_size / 1e6:.1f} MB (.json.gz {packed.stat().st_size / 1e6:.1f} MB)")
        base = best(plain, "import", args.repeat)
        print(f"interpreter + import profwin_memory: peak RSS {base['rss_mb']:.0f} MB\n")
        print("| file | profwin CPU s | profwin MB/s | stdlib only CPU s | json.load + loop CPU s | ratio (json / profwin) "
              "| profwin RSS MB | stdlib RSS MB | json.load RSS MB |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        for path in (plain, packed):
            ours = best(path, "profwin", args.repeat, limit=limit)
            stdlib = best(path, "profwin", args.repeat, limit=limit, stdlib=True)
            naive = best(path, "naive", args.repeat)
            for run in (ours, stdlib, naive):
                if run["error"] or run["events"] != events:
                    raise SystemExit(f"{path.name}: a contender failed: {run}")
            print(
                f"| {path.name.split('.', 1)[1]} | {ours['cpu_s']:.2f} | {plain.stat().st_size / 1e6 / ours['cpu_s']:.0f} "
                f"| {stdlib['cpu_s']:.2f} | {naive['cpu_s']:.2f} | **{naive['cpu_s'] / ours['cpu_s']:.1f}x** "
                f"| {ours['rss_mb']:.0f} | {stdlib['rss_mb']:.0f} | {naive['rss_mb']:.0f} |"
            )
        flood, bomb = folder / "flood.memory_timeline.json", folder / "bomb.memory_timeline.json.gz"
        zeros = folder / "zeros.memory_timeline.json.gz"
        write_flood(flood, bound + MIB)
        write_bomb(bomb, bound + 44 * MIB)
        write_zeros(zeros, bound + 44 * MIB)
        print(f"\nrefusals (bound: {bound:,} bytes decompressed)\n")
        print("| file | on disk MB | refused after s (wall) | CPU s | peak RSS MB | error |")
        print("|---|---|---|---|---|---|")
        cases = (
            (flood, "whitespace flood", "holds more than"),
            (bomb, "column bomb", "holds more than"),
            (zeros, "zero-byte bomb", "Invalid control character"),
        )
        for path, what, says in cases:
            run = best(path, "profwin", args.repeat, limit=limit)
            if says not in run["error"]:
                raise SystemExit(f"{what} was not refused as it should be: {run}")
            message = run["error"].split(": ", 2)[-1]
            print(
                f"| {what} | {path.stat().st_size / 1e6:.1f} | {run['wall_s']:.2f} | {run['cpu_s']:.2f} "
                f"| {run['rss_mb']:.0f} | {message} |"
            )


if __name__ == "__main__":
    main()
