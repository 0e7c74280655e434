"""Device time per step on traces with device lanes, checked against a brute-force count.

The device events here are synthetic (this machine has no GPU): random kernels on three
streams, some launched by a ``cudaLaunchKernel`` linked by correlation id, some not. The
expected busy time is counted microsecond by microsecond on integer times, independently of
profwin's interval union. (Agreement with HTA on a real CPU trace with synthetic device lanes:
integration_tests/traces/test_hta_agreement.py.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from profwin.cli import main
from profwin_traces import render_summary, summarize

_kernel = st.tuples(
    st.integers(0, 2),  # stream
    st.integers(0, 290),  # start
    st.integers(1, 40),  # duration
    st.sampled_from(["gemm_kernel", "ncclDevKernel_AllReduce", "Memcpy DtoD", "cudaStreamSync"]),
    st.booleans(),  # launched by a linked cudaLaunchKernel
)


@settings(max_examples=40, deadline=None)
@given(kernels=st.lists(_kernel, min_size=1, max_size=25))
def test_busy_idle_kinds_and_delays(tmp_path_factory: Any, kernels: list[tuple[int, int, int, str, bool]]) -> None:
    steps = [{"ph": "X", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": 100 * k, "dur": 100} for k in range(3)]
    events: list[dict[str, Any]] = list(steps)
    for i, (stream, start, dur, name, linked) in enumerate(kernels):
        args: dict[str, Any] = {"stream": stream}
        if linked:
            # The call starts 5 us and ends 3 us before the kernel (delay 2), in the same step.
            call_ts = max(start - 5, 100 * (start // 100))
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": call_ts, "dur": max(start - call_ts - 2, 0), "args": {"correlation": i}})  # fmt: skip
            args["correlation"] = i
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": start, "dur": dur, "args": args})
    path = tmp_path_factory.mktemp("dev") / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    summary = summarize(path)
    for step in summary.steps:
        mine = [k for k in kernels if 100 * step.number <= k[1] < 100 * (step.number + 1)]
        d = step.device
        if not mine:
            assert d is None or d.work == 0
            continue
        assert d is not None
        covered = {t for _, start, dur, _, _ in mine for t in range(start, start + dur)}
        span = max(s + n for _, s, n, _, _ in mine) - min(s for _, s, _, _, _ in mine)
        assert (d.work, d.busy_us, d.span_us, d.idle_us) == (len(mine), len(covered), span, span - len(covered))
        kinds = {
            "gemm_kernel": "compute",
            "ncclDevKernel_AllReduce": "communication",
            "Memcpy DtoD": "memory",
            "cudaStreamSync": "other",
        }
        for kind in ("compute", "communication", "memory", "other"):
            assert d.by_kind_us[kind] == sum(n for _, _, n, name, _ in mine if kinds[name] == kind)
        linked = [k for k in mine if k[4]]
        assert d.launches == len(linked)
        if linked:
            expected = [min(2, k[1] - 100 * (k[1] // 100)) for k in linked]
            assert d.launch_delay_max_us == max(expected)


def test_device_time_is_rendered_and_printed_as_json(tmp_path: Path, capsys: Any) -> None:
    events = [
        {"ph": "X", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 10,
            "dur": 5,
            "args": {"correlation": 7},
        },
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 30, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 8, "ts": 40, "dur": 20},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    text = render_summary(summarize(path))
    assert "device time in steps 0:1" in text
    assert "busy 0.040 ms of 0.040 ms (100.0 %), idle 0.000 ms; 2 kernels/copies" in text
    assert "by kind: compute 0.030 ms, communication 0.020 ms" in text
    assert "launch delay (call end to kernel start): mean 5.0 us, max 5.0 us (1 matched by correlation id)" in text
    assert main(["summarize", str(path), "--json"]) == 0
    device = json.loads(capsys.readouterr().out)["device"]
    assert (device["busy_us"], device["launches"], device["launch_delay_mean_us"]) == (40.0, 1, 5.0)
