"""The numpy path (``fast`` extra), with the compiled scanner and with msgspec, and the
standard-library path give the same summaries and trims.

Random traces in torch's shape: per thread a tree of properly nested operators in time order
(same-start nesting written in either order, as Kineto does), runtime calls on a lane of their own,
kernels on a device stream matched to their launches by correlation id, step markers on one or
two processes, metadata, instants and untimed events; small segments so that open events are
carried across segment edges. Floats are compared to 1e-6 relative (numpy sums in another order). The kinds table is also
set to restart at every segment, so that its restarts are taken too.
"""

from __future__ import annotations

import json
import math
import re
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profwin_traces import TraceError, columnar, summarize, trim
from profwin_traces.columnar import column_decoder, numpy_or_none
from profwin_traces.indexing import scan
from profwin_traces.native import compiled, native_status
from profwin_traces.reader import fast_decoder


def _clear() -> None:
    for cached in (numpy_or_none, column_decoder, fast_decoder):
        cached.cache_clear()


def _tree(draw: Any, ts: float, dur: float, depth: int, out: list[dict[str, Any]], tid: int, pid: int) -> None:
    """Children inside [ts, ts + dur), parents written after or before their children."""
    parent_first = draw(st.booleans())
    name = draw(st.sampled_from(["aten::mm", "aten::add", "aten::linear", "aten::gelu", "aten::copy_", "opé ✓"]))
    me = {"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if parent_first:
        out.append(me)
    if depth > 0 and dur >= 4:
        t = ts
        for _ in range(draw(st.integers(0, 3))):
            gap = draw(st.sampled_from([0.0, 1.0, 2.5]))
            length = draw(st.sampled_from([0.0, 1.0, 2.0, 3.5]))
            if t + gap + length > ts + dur:
                break
            _tree(draw, t + gap, length, depth - 1, out, tid, pid)
            t += gap + length
    if not parent_first:
        out.append(me)


@st.composite
def traces(draw: Any) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}},
    ]
    pids = [1, 2] if draw(st.booleans()) else [1]
    runtime: list[dict[str, Any]] = []
    device: list[dict[str, Any]] = []
    correlation = 0
    stream_free = 0.0  # a stream runs one kernel at a time, in order
    for k in range(draw(st.integers(1, 6))):
        start = 100.0 * k
        for pid in pids:
            events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": pid, "tid": 2,
                           "ts": start, "dur": 90.0})  # fmt: skip
            ops: list[dict[str, Any]] = []
            _tree(draw, start + 1, float(draw(st.integers(10, 60))), 3, ops, 2, pid)
            # In time order, as Kineto writes: only events with the same start keep either order.
            events += sorted(ops, key=lambda e: e["ts"])
        if draw(st.booleans()):
            events.append({"ph": "i", "name": "instant", "pid": 1, "tid": 3, "ts": start + 5, "s": "t"})
        at = start
        for _ in range(draw(st.integers(0, 3))):
            correlation += 1
            at += draw(st.integers(2, 20))
            runtime.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": at,
                            "dur": 2.0, "args": {"correlation": correlation}})  # fmt: skip
            kernel = draw(st.sampled_from(["gemm_kernel", "ncclAllReduceKernel", "Memcpy HtoD", "elementwise"]))
            begin = max(stream_free, at + draw(st.integers(1, 30)))
            length = float(draw(st.integers(0, 20)))
            stream_free = begin + length
            device.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": begin, "dur": length,
                           "args": {"correlation": correlation if draw(st.booleans()) else correlation + 1000}})  # fmt: skip
    events.append({"ph": "X", "name": "untimed", "pid": 1, "tid": 2})
    return events + runtime + device


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=2e-3)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _both(monkeypatch: pytest.MonkeyPatch, run: Any, *, exact: bool = True) -> tuple[Any, Any]:
    """``run()`` on the fast path, with the compiled scanner and with msgspec (with ``exact``, they
    must agree exactly: the same columns), and on the standard path."""
    results = []
    for fast, native in (("1", "1"), ("1", "0"), ("0", "1")):
        monkeypatch.setenv("PROFWIN_TRACES_FAST", fast)
        monkeypatch.setenv("PROFWIN_TRACES_NATIVE", native)
        _clear()
        assert (numpy_or_none() is not None) == (fast == "1"), "numpy and msgspec are in the dev group"
        assert (compiled() is not None) == (fast == native == "1"), native_status()
        results.append(run())
    _clear()
    assert results[0] == results[1] or not exact, "the compiled scanner and msgspec give other columns"
    return results[0], results[2]


def _summary(path: Any, window: str | None) -> Any:
    """The summary as a dict, or the reason it was refused (a window outside the trace)."""
    try:
        return summarize(path, window=window).to_dict()
    except TraceError as exc:
        return exc.reason


@settings(max_examples=60, deadline=None)
@given(
    events=traces(),
    segment=st.sampled_from([3, 17, 1 << 16]),
    kinds=st.sampled_from([0, columnar.MAX_KINDS]),
    lane_loop=st.sampled_from([0, columnar.LANE_LOOP]),
    window=st.sampled_from([None, "1:3", "0:1"]),
    indent=st.sampled_from([None, 1, 2]),
)
def test_fast_and_standard_summaries_agree(
    tmp_path_factory: Any,
    events: list[dict[str, Any]],
    segment: int,
    kinds: int,
    lane_loop: int,
    window: str | None,
    indent: int | None,
) -> None:
    path = tmp_path_factory.mktemp("agree") / "t.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=indent, ensure_ascii=False))
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(columnar, "SEGMENT", segment)
        monkeypatch.setattr(columnar, "MAX_KINDS", kinds)  # 0: the kinds table starts again every segment
        monkeypatch.setattr(columnar, "LANE_LOOP", lane_loop)  # 0: nesting depths of all lanes at once
        fast, slow = _both(monkeypatch, lambda: _summary(path, window))
        assert _close(fast, slow), (fast, slow)


@settings(max_examples=20, deadline=None)
@given(events=traces())
def test_fast_and_standard_trims_are_identical(tmp_path_factory: Any, events: list[dict[str, Any]]) -> None:
    folder = tmp_path_factory.mktemp("trim")
    path = folder / "t.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=2, ensure_ascii=False))
    outs = [folder / f"{way}.pt.trace.json" for way in ("native", "msgspec", "slow")]
    targets = iter(outs)
    with pytest.MonkeyPatch.context() as monkeypatch:
        _both(monkeypatch, lambda: trim(path, "0:1", next(targets)), exact=False)  # each its own output path
    assert outs[0].read_text() == outs[1].read_text() == outs[2].read_text()


def test_kinds_table_restarts_keep_each_events_thread(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the kinds table starts again, a kind id names another (phase, category, name,
    thread) than before it: here the first kind of each segment is on another thread each time."""
    events = []
    for k in range(6):
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1,
                       "ts": k * 100.0, "dur": 90.0})  # fmt: skip
        events.append(
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2 + k % 3, "ts": k * 100.0 + 1, "dur": 5.0}
        )
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=1))
    monkeypatch.setattr(columnar, "SEGMENT", 1)
    monkeypatch.setattr(columnar, "MAX_KINDS", 0)
    fast, slow = _both(monkeypatch, lambda: _summary(path, None))
    assert [(t["tid"], t["events"]) for t in fast["threads"]] == [(1, 6), (2, 2), (3, 2), (4, 2)]
    assert _close(fast, slow), (fast, slow)


@settings(max_examples=30, deadline=None)
@given(events=traces(), budget=st.sampled_from([0, 12, 40]), segment=st.sampled_from([3, 1 << 16]))
def test_names_not_held_read_their_events_whole(
    tmp_path_factory: Any, events: list[dict[str, Any]], budget: int, segment: int
) -> None:
    """Past the names' budget (MAX_RAW_NAME_CHARS), a kind keeps no name and the native path
    decodes its kept events whole (a marker's name, its label); the scanner and msgspec give the
    same summary, with every step. The standard path holds names otherwise, so it is not compared."""
    for i, event in enumerate(events):  # each step's GPU copy of its marker, as Kineto writes them
        if event.get("cat") == "user_annotation":
            events.insert(i + 1, {**event, "cat": "gpu_user_annotation", "pid": 0, "tid": 7})
    path = tmp_path_factory.mktemp("held") / "t.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=1, ensure_ascii=False))
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(columnar, "MAX_RAW_NAME_CHARS", budget)
        monkeypatch.setattr(columnar, "SEGMENT", segment)
        fast, _ = _both(monkeypatch, lambda: _summary(path, None))
    assert {s["label"] for s in fast["steps"]} == {e["name"] for e in events if e.get("cat") == "user_annotation"}


@st.composite
def marked(draw: Any) -> list[dict[str, Any]]:
    """Step markers of every route: torch's numbered ones and vLLM's and SGLang's by order, GPU
    copies (``gpu_user_annotation``, and other ``gpu_*`` categories that are never markers),
    ``profwin.tokens`` annotations and their copies, annotations and the profiler's own span that
    mark nothing, labels past MAX_LABEL_CHARS and names too long to be held."""
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": 1, "tid": 2, "ts": 0.0, "dur": 1e4}
    ]
    names = [
        "ProfilerStep#{k}", "execute_context_{k}(3)_generation_2(2)", "step[PREFILL bs={k}]",
        "profwin.tokens " + "r1:{k}", "forward", "ProfilerStep#{k}" + "x" * 300, "execute_context_" + "y" * 1200,
    ]  # fmt: skip
    for k in range(draw(st.integers(1, 8))):
        for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=4)):
            host = {"ph": "X", "cat": "user_annotation", "name": name.format(k=k), "pid": draw(st.sampled_from([1, 2])),
                    "tid": 2, "ts": 100.0 * k + len(events), "dur": 50.0}  # fmt: skip
            events.append(host)
            for cat in draw(st.lists(st.sampled_from(["gpu_user_annotation", "gpu_memcpy"]), max_size=2)):
                events.append({**host, "cat": cat, "pid": 0, "tid": 7, "ts": host["ts"] + 1})
    return events


@settings(max_examples=60, deadline=None)
@given(events=marked(), segment=st.sampled_from([2, 5, 1 << 16]), budget=st.sampled_from([0, 64, columnar.MAX_RAW_NAME_CHARS]))
def test_markers_of_every_route_are_indexed_alike(
    tmp_path_factory: Any, events: list[dict[str, Any]], segment: int, budget: int
) -> None:
    """The three paths index the same step markers, GPU copies and ``profwin.tokens`` spans, in
    the same order, whatever the segments and the names' budget."""
    path = tmp_path_factory.mktemp("marked") / "t.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=1))

    def markers() -> Any:
        index = scan(path)
        try:
            return dict(index.markers), dict(index.device_markers), list(index.tokens)
        finally:
            index.close()

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(columnar, "SEGMENT", segment)
        monkeypatch.setattr(columnar, "MAX_RAW_NAME_CHARS", budget)
        fast, slow = _both(monkeypatch, markers)
    assert fast == slow
    host = [e["name"] for e in events if e["cat"] == "user_annotation"]
    assert sum(map(len, fast[0].values())) == sum(1 for n in host if re.match(r"ProfilerStep#\d+$|execute_|step\[", n))
    assert len(fast[2]) == sum(1 for n in host if n.startswith("profwin.tokens "))


@settings(max_examples=500, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 80), st.integers(0, 12)), min_size=1, max_size=40),
    in_time_order=st.booleans(),
)
def test_union_per_group_is_the_python_union(rows: list[tuple[int, int, int]], in_time_order: bool) -> None:
    """columnar._union (the numpy path's busy and span per step) against device._union, group by
    group: groups in time order (each starts after the earlier ones end: the running end over all
    groups) and mixed (exact ranks per group). Times are quarters, so every sum is exact."""
    from profwin_traces import device

    np = numpy_or_none()
    if in_time_order:
        rows = [(g, 100 * g + s % 40, d % 8) for g, s, d in rows]
    group = np.array([g for g, _, _ in rows], np.int64)
    start = np.array([s / 4 for _, s, _ in rows])
    end = start + np.array([d / 2 for *_, d in rows])
    busy, span = columnar._union(np, start, end, group, 4)
    for k in range(4):
        mine = [(a, b) for g, a, b in zip(group.tolist(), start.tolist(), end.tolist(), strict=True) if g == k]
        assert (busy[k], span[k]) == device._union(mine), k


_TIES = [0.0005, 1.0005, 2.675, 0.0015, -0.0025, 1e-4, -1e-4, 0.0, -0.0, 4503599627370.4955, 1e300, -1e300]


@settings(max_examples=3000, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.floats(-1e7, 1e7),
            st.integers(-(10**9), 10**9).map(lambda k: k / 1000 + 0.0005),  # ties, as near as floats come
            st.integers(-(10**9), 10**9).map(lambda k: k / 2000),
            st.sampled_from(_TIES),
        ),
        max_size=40,
    )
)
def test_rounded_is_pythons_round_bit_for_bit(values: list[float]) -> None:
    np = numpy_or_none()
    assert np is not None, "numpy is in the dev group"
    got = columnar.rounded(np, np.array(values, np.float64))
    want = [round(v, 3) for v in values]
    assert [struct.pack("<d", v) for v in got] == [struct.pack("<d", v) for v in want]
