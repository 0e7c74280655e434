"""Add synthetic CUDA device lanes to a REAL CPU trace (this machine has no GPU).

Every CPU operator in ``KERNEL_OPS`` of a real torch trace gets what a CUDA build would write
for it: a ``cudaLaunchKernel`` runtime call inside the operator, the kernel it launches on
stream 7 (its start delayed by a launch latency that varies with the operator), linked by a
correlation id and an ``ac2g`` flow pair. Every third step adds an NCCL all-reduce on stream
8 that overlaps the compute kernels, and a ``Memcpy HtoD`` copy; some launches are made late
so that the device sits idle between kernels. The host side (operators, step markers, times)
stays exactly as torch recorded it.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

KERNEL_OPS = (
    "aten::addmm",
    "aten::mm",
    "aten::bmm",
    "aten::_softmax",
    "aten::native_layer_norm",
    "aten::gelu",
    "aten::relu",
    "aten::clamp_min",
)
_STEP = re.compile(r"ProfilerStep#(\d+)")


def add_device_lanes(cpu_trace: Path, out: Path) -> dict[str, int]:
    """Write ``cpu_trace`` plus device lanes to ``out``; returns counts of what was added."""
    data = cpu_trace.read_bytes()
    trace = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    events: list[dict[str, Any]] = trace["traceEvents"]
    steps = sorted((e for e in events if e.get("ph") == "X" and _STEP.fullmatch(str(e.get("name")))), key=lambda e: e["ts"])
    ops = sorted((e for e in events if e.get("ph") == "X" and e.get("name") in KERNEL_OPS), key=lambda e: e["ts"])
    device: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 8, "args": {"name": "stream 8 "}},
    ]
    correlation = 1000
    stream_free = {7: 0.0, 8: 0.0}
    counts = {"kernels": 0, "nccl": 0, "memcpy": 0}

    def launch(op: dict[str, Any], name: str, cat: str, stream: int, dur: float, latency: float, runtime: str) -> None:
        nonlocal correlation
        correlation += 1
        # Whole microseconds on the device side: HTA truncates times to integers, which would
        # open sub-microsecond gaps between back-to-back kernels and blur the comparison.
        call_ts = float(math.ceil(op["ts"] + op.get("dur", 0.0) * 0.3))
        call_dur = 3.0 + correlation % 5
        start = max(call_ts + call_dur + latency, stream_free[stream])
        stream_free[stream] = start + dur
        args = {"correlation": correlation, "device": 0, "stream": stream}
        device.extend([
            {"ph": "X", "cat": "cuda_runtime", "name": runtime, "pid": op["pid"], "tid": op["tid"], "ts": call_ts,
             "dur": call_dur, "args": {"cbid": 211, "correlation": correlation}},
            {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur, "args": args},
            {"ph": "s", "id": correlation, "pid": op["pid"], "tid": op["tid"], "ts": call_ts, "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": correlation, "pid": 0, "tid": stream, "ts": start, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        ])  # fmt: skip

    for i, op in enumerate(ops):
        base = op["name"].split("::")[-1]
        launch(op, f"void at::native::{base}_kernel<float>(float const*, float*, int)", "kernel", 7,
               dur=150.0 + (i % 7) * 95.0, latency=10.0 + (i % 11) * 40.0, runtime="cudaLaunchKernel")  # fmt: skip
        counts["kernels"] += 1
    for n, step in enumerate(steps):
        if n % 3:
            continue
        first = next((op for op in ops if step["ts"] <= op["ts"] < step["ts"] + step["dur"]), None)
        if first is None:
            continue
        launch(first, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "kernel", 8,
               dur=2400.0, latency=25.0, runtime="cudaLaunchKernel")  # fmt: skip
        launch(first, "Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 8, dur=600.0, latency=12.0, runtime="cudaMemcpyAsync")
        counts["nccl"] += 1
        counts["memcpy"] += 1
    # Kineto writes CUPTI activities after the host operators, in time order.
    trace["traceEvents"] = events + device[:4] + sorted(device[4:], key=lambda e: e["ts"])
    text = json.dumps(trace)
    out.write_bytes(gzip.compress(text.encode(), 1) if out.name.endswith(".gz") else text.encode())
    return counts
