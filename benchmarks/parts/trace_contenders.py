"""The contenders of ``traces_bench.py``, each run in a fresh interpreter of its own.

Only what the contenders need is imported here (``json`` and ``re``; the rest inside each one),
so that a run's CPU time is the contender's and not the benchmark's: importing the benchmark
script itself (argparse, subprocess, tempfile, shutil, the trace generator) cost 0.023 CPU s in
every child, about 2.5 % of a 256 MiB summarize.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any


def _steps(events: list[dict[str, Any]], pattern: str) -> dict[int, tuple[float, float]]:
    """The steps' ``(start, end)`` by number: host-side complete events whose name starts with the
    producer's marker ``pattern``, numbered by its group, or in time order where it has none."""
    marker = re.compile(pattern)
    found = [
        e
        for e in events
        if e.get("ph") == "X" and marker.match(str(e.get("name", ""))) and not str(e.get("cat", "")).startswith("gpu_")
    ]
    if marker.groups:
        numbered = [(int(marker.match(e["name"]).group(1)), e) for e in found]  # type: ignore[union-attr]
    else:
        numbered = list(enumerate(sorted(found, key=lambda e: e["ts"])))
    return {n: (e["ts"], e["ts"] + e["dur"]) for n, e in numbered}


def naive_summarize(path: str, pattern: str) -> str:
    """What a user writes today: json.load the whole trace, then loop over its events."""
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    steps = _steps(trace["traceEvents"], pattern)
    self_us: dict[str, float] = {}
    stacks: dict[Any, list[list[Any]]] = {}
    for e in sorted((e for e in trace["traceEvents"] if e.get("ph") == "X"), key=lambda e: (e["ts"], -e.get("dur", 0))):
        stack = stacks.setdefault((e["pid"], e["tid"]), [])
        end = e["ts"] + e.get("dur", 0)
        while stack and stack[-1][0] <= e["ts"]:
            stack.pop()
        if stack:
            self_us[stack[-1][1]] -= e.get("dur", 0)
        self_us[e["name"]] = self_us.get(e["name"], 0.0) + e.get("dur", 0)
        stack.append([end, e["name"]])
    top = sorted(self_us.items(), key=lambda kv: -kv[1])[:20]
    return f"{len(steps)} steps, top {top[0][0][:40]}"


def naive_trim(path: str, out: str, first_step: str, end_step: str, pattern: str) -> str:
    """json.load, keep the events overlapping steps [first, last), json.dump."""
    first, last = int(first_step), int(end_step)
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    spans = [span for n, span in _steps(trace["traceEvents"], pattern).items() if first <= n < last]
    t0, t1 = min(s for s, _ in spans), max(e for _, e in spans)
    trace["traceEvents"] = [
        e
        for e in trace["traceEvents"]
        if e.get("ph") == "M" or (e.get("ts", t0) < t1 and e.get("ts", t0) + e.get("dur", 0) >= t0)
    ]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(trace, f)
    return f"{len(trace['traceEvents'])} events kept"


def cli_summarize(path: str) -> str:
    """``profwin summarize FILE``, the command as a user runs it (its text output discarded)."""
    import contextlib
    import io

    from profwin.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["summarize", path])
    steps = re.search(r"^steps\s+(\d+)", out.getvalue(), re.MULTILINE)
    return f"{steps.group(1) if steps else '?'} steps, exit {code}"


def cli_trim(path: str, out: str, first_step: str, end_step: str) -> str:
    """``profwin trim FILE --window FIRST:END -o OUT``, the command."""
    import contextlib
    import io

    from profwin.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as text:
        code = main(["trim", path, "--window", f"{first_step}:{end_step}", "-o", out])
    kept = re.search(r"steps, ([\d,]+) events", text.getvalue())
    return f"{kept.group(1) if kept else '?'} events kept, exit {code}"


def hta_load(path: str) -> str:
    """HTA 0.5.0 loading the trace (its folder must hold only this trace): what any HTA analysis pays first."""
    import logging

    from hta.trace_analysis import TraceAnalysis

    logging.disable(logging.WARNING)
    analysis = TraceAnalysis(trace_dir=os.path.dirname(path))
    return f"{len(analysis.t.get_trace(0)):,} events in HTA's frame"


def gzip_dc(path: str) -> str:
    """``gzip -dc FILE > /dev/null``: the decompression floor for a .json.gz."""
    import resource
    import subprocess

    with open("/dev/null", "wb") as null:
        subprocess.run(["gzip", "-dc", path], stdout=null, check=True)
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return f"child cpu {r.ru_utime + r.ru_stime:.3f} s"


def parse_stdlib(path: str) -> str:
    from profwin_traces.reader import read_trace

    with read_trace(path) as trace:
        n = sum(1 for _ in trace.events())
    return f"{n} events"


def parse_ijson(path: str) -> str:
    import ijson

    with open(path, "rb") as f:
        n = sum(1 for _ in ijson.items(f, "traceEvents.item", use_float=True))
    return f"{n} events ({ijson.backend})"


def parse_msgspec(path: str) -> str:
    import msgspec

    # Only the fields a summary needs: msgspec skips the rest of each event without building it.
    event = msgspec.defstruct("Event", [("ph", str, ""), ("name", str, ""), ("ts", float, 0.0), ("dur", float, 0.0)])
    trace = msgspec.defstruct("Trace", [("traceEvents", list[event])])  # type: ignore[valid-type]
    with open(path, "rb") as f:
        n = len(msgspec.json.decode(f.read(), type=trace).traceEvents)
    return f"{n} events (whole file, typed)"


def parse_orjson(path: str) -> str:
    import orjson

    with open(path, "rb") as f:
        n = len(orjson.loads(f.read())["traceEvents"])
    return f"{n} events (whole file)"


def parse_json_load(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        n = len(json.load(f)["traceEvents"])
    return f"{n} events (whole file)"


CONTENDERS = {
    "cli_summarize": cli_summarize,
    "cli_trim": cli_trim,
    "hta_load": hta_load,
    "gzip_dc": gzip_dc,
    "naive_summarize": naive_summarize,
    "naive_trim": naive_trim,
    "parse_stdlib": parse_stdlib,
    "parse_ijson": parse_ijson,
    "parse_msgspec": parse_msgspec,
    "parse_orjson": parse_orjson,
    "parse_json_load": parse_json_load,
}
