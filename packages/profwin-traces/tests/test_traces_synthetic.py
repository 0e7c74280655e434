"""profwin_traces on small hand-built traces in the shapes vLLM and SGLang write.

Every expected number below is worked out by hand from the events the test writes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from profwin import Window
from profwin_traces import summarize, trim


def X(name: str, ts: float, dur: float, *, tid: int = 1, pid: int = 100, cat: str = "cpu_op", **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


META = [
    {"ph": "M", "name": "process_name", "pid": 100, "tid": 0, "args": {"name": "VllmWorker"}},
    {"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "main"}},
    {"ph": "M", "name": "thread_name", "pid": 100, "tid": 7, "args": {"name": "stream 7"}},
]


def vllm_events() -> list[dict[str, Any]]:
    """Four vLLM steps of 100 µs each, 1000 µs apart; in each, an op of 60 µs holding a 25 µs
    child, and on stream 7 a 30 µs kernel launched in the step that runs 80 µs after it."""
    events: list[dict[str, Any]] = []
    for k in range(4):
        t = 1000.0 * (k + 1)
        ctx, gen = (1, 0) if k == 0 else (0, 1)
        events.append(X(f"execute_context_{ctx}({7 * ctx})_generation_{gen}({gen})", t, 100.0, cat="user_annotation"))
        events.append(X("aten::linear", t + 10, 60.0))
        events.append(X("aten::addmm", t + 20, 25.0))
        # vLLM on CUDA: the same annotation again on the GPU stream, trailing the host step.
        events.append(X(events[-3]["name"], t + 90, 60.0, tid=7, cat="gpu_user_annotation"))
        events.append(X("gemm_kernel", t + 100, 30.0, tid=7, cat="kernel"))
    return events


def write(path: Path, events: list[dict[str, Any]], **top: Any) -> Path:
    trace = {"schemaVersion": 1, "traceEvents": META + events, **top}
    text = json.dumps(trace, indent=1)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def load(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)  # type: ignore[no-any-return]


def test_vllm_steps_numbered_in_order_with_self_times(tmp_path: Path) -> None:
    path = write(tmp_path / "rank0.1.pt.trace.json.gz", vllm_events(), traceName="x")
    s = summarize(path)
    assert s.producer == "vllm"
    assert [st.number for st in s.steps] == [0, 1, 2, 3]
    assert s.steps[0].label == "execute_context_1(7)_generation_0(0)"
    assert [st.dur_us for st in s.steps] == [100.0] * 4
    assert [st.start_us for st in s.steps] == [0.0, 1000.0, 2000.0, 3000.0]
    assert s.step_us == {"count": 4, "min": 100.0, "median": 100.0, "mean": 100.0, "max": 100.0, "total": 400.0}
    # Events starting inside a host step: marker, linear, addmm and the GPU annotation (t+90);
    # the kernel starts at t+100, the step's end, so it is outside.
    assert [st.events for st in s.steps] == [4] * 4
    ops = {o.name: (o.count, o.self_us) for o in s.top_ops}
    assert ops == {"aten::linear": (4, 4 * 35.0), "aten::addmm": (4, 4 * 25.0)}
    assert [(k.name, k.count, k.self_us) for k in s.top_kernels] == [("gemm_kernel", 4, 120.0)]
    assert {(t.thread, t.process, t.events) for t in s.threads} == {("main", "VllmWorker", 12), ("stream 7", "VllmWorker", 8)}
    # Every byte of event text is in a step or outside all of them.
    assert sum(st.bytes for st in s.steps) + s.bytes_outside_steps == s.trace.event_bytes
    assert s.trace.top_level_keys == ("schemaVersion", "traceEvents", "traceName")


def test_vllm_window_and_trim_keep_numbers(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", vllm_events())
    s = summarize(path, window=Window(1, 3), top=1)
    assert s.selected == "1:3"
    assert [st.number for st in s.steps if st.in_window] == [1, 2]
    assert s.top_ops[0].name == "aten::linear"
    assert s.top_ops[0].count == 2
    assert len(s.top_ops) == 1

    out = tmp_path / "cut.json.gz"
    result = trim(path, "1:3", out)
    assert (result.steps, result.step_count, result.producer) == ("1:3", 2, "vllm")
    trace = load(out)
    names = [e["name"] for e in trace["traceEvents"]]
    # Metadata, then steps 1 and 2 with their ops, GPU annotations and kernels. The window's
    # time range ends where step 2's GPU annotation ends (3090 + 60), so its kernel is kept.
    assert [e for e in trace["traceEvents"] if e["ph"] == "M"] == META
    assert result.start_us == 2000.0
    assert result.end_us == 3150.0
    assert len(trace["traceEvents"]) == result.events == 3 + 2 * 5
    assert names.count("gemm_kernel") == 2
    assert trace["profwin"]["first_step"] == 1
    assert trace["profwin"]["window"] == "1:3"
    # The trimmed trace numbers its steps as the original did.
    again = summarize(out)
    assert [st.number for st in again.steps] == [1, 2]
    assert [st.label for st in again.steps] == [st.label for st in s.steps if st.in_window]
    # Trimming the trimmed trace again keeps the numbers too.
    inner = trim(out, "2:3", tmp_path / "inner.json")
    assert summarize(tmp_path / "inner.json").steps[0].number == 2
    assert inner.step_count == 1


def test_sglang_spans_and_nesting_ties(tmp_path: Path) -> None:
    """SGLang's step[...] spans; a parent written after its child with the same start time."""
    events = []
    for k, mode in enumerate(["EXTEND bs=2 toks=40", "DECODE bs=2 toks=2", "DECODE bs=2 toks=2"]):
        t = 500.0 * k
        events += [
            X(f"step[{mode}]", t, 200.0, cat="user_annotation"),
            X("child", t + 50, 40.0),  # written first, same start as its parent
            X("parent", t + 50, 100.0),
            X("grandchild", t + 60, 10.0),
        ]
    path = write(tmp_path / "sg.trace.json", events)
    s = summarize(path, window="1:")
    assert s.producer == "sglang"
    assert [(st.number, st.label) for st in s.steps] == [
        (0, "step[EXTEND bs=2 toks=40]"),
        (1, "step[DECODE bs=2 toks=2]"),
        (2, "step[DECODE bs=2 toks=2]"),
    ]
    assert s.selected == "1:3"
    # parent 100 - child 40 = 60; child 40 - grandchild 10 = 30; grandchild 10 (per step, 2 steps)
    assert {o.name: o.self_us for o in s.top_ops} == {"parent": 120.0, "child": 60.0, "grandchild": 20.0}


def test_torch_markers_win_and_multi_rank_union(tmp_path: Path) -> None:
    """ProfilerStep#k numbers are kept as written; one number on two ranks is one step."""
    events = [
        X("ProfilerStep#7", 0.0, 50.0, pid=1, cat="user_annotation"),
        X("ProfilerStep#7", 10.0, 60.0, pid=2, cat="user_annotation"),
        X("ProfilerStep#8", 100.0, 50.0, pid=1, cat="user_annotation"),
        X("execute_context_0(0)_generation_1(1)", 0.0, 40.0, pid=1, cat="user_annotation"),
    ]
    s = summarize(write(tmp_path / "t.json", events))
    assert s.producer == "torch"
    assert [(st.number, st.start_us, st.dur_us) for st in s.steps] == [(7, 0.0, 70.0), (8, 100.0, 50.0)]


def test_window_partly_outside_is_clipped_with_a_note(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", vllm_events())
    s = summarize(path, window="2:10")
    assert s.selected == "2:4"
    assert s.notes == ("window 2:10 clipped to the steps in the trace: 2:4",)


def test_bare_array_trace(tmp_path: Path) -> None:
    """Chrome's JSON Array Format: a list of events with no enclosing object."""
    path = tmp_path / "array.json"
    path.write_text(json.dumps(META + vllm_events()))
    s = summarize(path)
    assert len(s.steps) == 4
    assert s.trace.top_level_keys == ("traceEvents",)
    trim(path, "0:1", tmp_path / "out.json")
    assert summarize(tmp_path / "out.json").steps[0].label == "execute_context_1(7)_generation_0(0)"


def test_first_step_numbers_order_numbered_steps(tmp_path: Path) -> None:
    """A vLLM trace of session steps 20..23 addressed by those numbers."""
    path = write(tmp_path / "t.json", vllm_events())
    s = summarize(path, first_step=20, window="21:23")
    assert [st.number for st in s.steps] == [20, 21, 22, 23]
    assert s.selected == "21:23"
    result = trim(path, "23:24", tmp_path / "o.json", first_step=20)
    assert result.steps == "23:24"
    assert [st.number for st in summarize(tmp_path / "o.json").steps] == [23]
