"""Hostile and odd traces: every reader bound fails clearly, in bounded memory, never with a
traceback from inside a library; the fast (msgspec) and standard readers agree event for event."""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profwin import ConfigError
from profwin.cli import main
from profwin_traces import TraceError, count_steps, summarize, token_steps
from profwin_traces import reader as reader_module
from profwin_traces import scan as scan_module
from profwin_traces.reader import TraceReader, fast_decoder


def write(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode(), 1) if path.name.endswith(".gz") else text.encode())
    return path


def step(n: int | str, ts: float = 0.0, dur: float = 10.0, pid: Any = 1, tid: Any = 1) -> dict[str, Any]:
    return {"ph": "X", "name": f"ProfilerStep#{n}", "pid": pid, "tid": tid, "ts": ts, "dur": dur}


def doc(events: list[dict[str, Any]], **header: Any) -> str:
    return json.dumps({**header, "traceEvents": events})


def error(path: Path) -> str:
    with pytest.raises(TraceError) as info:
        summarize(path)
    return info.value.reason


def peak_rss_mb_of_summarize(path: Path) -> tuple[float, str]:
    """Summarize ``path`` in a fresh interpreter; its peak RSS (MB) and the error it printed."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork+exec from this (large) process.
    code = (
        "import re, sys\n"
        "from profwin_traces import TraceError, summarize\n"
        "try:\n    summarize(sys.argv[1]); msg = 'ok'\n"
        "except TraceError as exc:\n    msg = exc.reason\n"
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(int(hwm) / 1024, msg, sep='\\t')\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    rss, msg = out.strip().split("\t", 1)
    return float(rss), msg


def test_huge_top_level_strings_in_a_small_gzip(tmp_path: Path) -> None:
    """Issue 14: a 700 KB gzip of top-level keys holding huge strings took summarize to 829 MB."""
    big = "x" * (12 << 20)
    text = "{" + ",".join(f'"k{i}": "{big}"' for i in range(10)) + ', "traceEvents": []}'
    path = write(tmp_path / "bomb.json.gz", text)
    assert path.stat().st_size < 700_000
    rss, msg = peak_rss_mb_of_summarize(path)
    assert "top-level values other than 'traceEvents' hold over 16 MiB" in msg
    assert rss < 200, f"peak RSS {rss:.0f} MB"


def test_one_value_over_the_bound(tmp_path: Path) -> None:
    path = write(tmp_path / "big.json", '{"traceEvents": [{"ph": "X", "name": "' + "y" * (17 << 20) + '"}]}')
    assert "event 0 at character 17 is over 16 MiB" in error(path)


def test_too_many_threads(tmp_path: Path) -> None:
    limit = scan_module.MAX_THREADS
    events = [step(0, 0, 1e9)] + [{"ph": "i", "name": "x", "pid": 1, "tid": t, "ts": 1.0} for t in range(limit + 5)]
    path = write(tmp_path / "threads.json.gz", doc(events))
    assert error(path) == f"more than {limit:,} distinct (pid, tid) threads; a real trace has a few hundred"


@pytest.fixture(params=["1", "0"], ids=["msgspec", "stdlib"])
def reader_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("PROFWIN_TRACES_FAST", request.param)
    fast_decoder.cache_clear()
    yield request.param
    monkeypatch.undo()
    fast_decoder.cache_clear()


def test_deep_nesting(tmp_path: Path, reader_kind: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    path = write(tmp_path / "deep.json", '{"traceEvents": [' + json.dumps(step(0))[:-1] + ', "args": ' + deep + "}]}")
    assert "event 0 at character 17 is nested too deeply" in error(path)
    path = write(tmp_path / "deep-header.json", '{"meta": ' + deep + ', "traceEvents": []}')
    assert "top-level key 'meta' at character 9 is nested too deeply" in error(path)


@pytest.mark.parametrize("bad", [[1, 2], {"a": 1}, "p" * 300, 1e400])
@pytest.mark.parametrize("field", ["pid", "tid"])
def test_wrong_typed_pid_and_tid(tmp_path: Path, bad: Any, field: str) -> None:
    event = dict(step(0), **{field: bad})
    text = doc([event]).replace("Infinity", "1e400")
    reason = error(write(tmp_path / "ids.json", text))
    assert reason.startswith(f"event 0: {field} must be an int or a string of at most 256 characters (got ")


def test_step_number_with_too_many_digits(tmp_path: Path) -> None:
    path = write(tmp_path / "digits.json", doc([step("9" * 5000)]))
    assert error(path).startswith("event 0: step marker ProfilerStep#999")
    assert "has a 5000-digit number; at most 18 digits" in error(path)
    assert count_steps(write(tmp_path / "ok.json", doc([step("9" * 18)]))) == 1
    # count_steps reads as summarize does: a trace it cannot read is no trace of 0 steps.
    with pytest.raises(TraceError, match="has a 5000-digit number"):
        count_steps(path)
    with pytest.raises(TraceError, match="starting a Chrome/Kineto trace"):
        count_steps(write(tmp_path / "garbage.json", "garbage"))
    with pytest.raises(TraceError, match="starting a Chrome/Kineto trace"):
        token_steps(write(tmp_path / "garbage.json", "garbage"))


def test_nan_infinite_and_negative_times_are_counted_not_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [
        step(0, 0.0, 100.0),
        {"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0},
        {"ph": "X", "name": "aten::nan_ts", "pid": 1, "tid": 1, "ts": math.nan, "dur": 5.0},
        {"ph": "X", "name": "aten::inf_dur", "pid": 1, "tid": 1, "ts": 20.0, "dur": math.inf},
        {"ph": "X", "name": "aten::neg_dur", "pid": 1, "tid": 1, "ts": 30.0, "dur": -4.0},
    ]
    path = write(tmp_path / "nan.json", json.dumps({"traceEvents": events}))
    summary = summarize(path)
    assert summary.bad_times == 3
    assert any("3 events have a ts or dur that is NaN" in note for note in summary.notes)
    assert main(["summarize", str(path), "--json"]) == 0

    def refuse(constant: str) -> None:
        raise AssertionError(f"bare {constant} in --json output")

    printed = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert printed["bad_times"] == 3


def test_negative_top_is_a_config_error(tmp_path: Path) -> None:
    path = write(tmp_path / "t.json", doc([step(0)]))
    with pytest.raises(ConfigError, match="top: must be a non-negative int"):
        summarize(path, top=-1)


def test_distinct_names_past_the_cap_share_one_bucket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "MAX_NAMES", 3)
    events = [step(0, 0, 1000)] + [
        {"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10 * i + 1, "dur": 2} for i in range(6)
    ]
    summary = summarize(write(tmp_path / "names.json", doc(events)))
    names = {o.name: o.count for o in summary.top_ops}
    assert names == {"op0": 1, "op1": 1, "op2": 1, scan_module.OTHER_NAMES: 3}
    assert any("over 3 distinct operator names" in note for note in summary.notes)


def test_peak_rss_is_bounded_on_many_events(tmp_path: Path) -> None:
    """300,000 events (about 45 MB of JSON) summarize in well under 200 MB."""
    lines = [json.dumps(step(k, k * 1000.0, 900.0)) for k in range(1000)]
    lines += [
        json.dumps(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"aten::op{i % 50}",
                "pid": 1,
                "tid": 1,
                "ts": i * 3.3,
                "dur": 1.0,
                "args": {"External id": i, "Input Dims": [[8, 64], [64, 256]]},
            }
        )
        for i in range(300_000)
    ]
    path = write(tmp_path / "many.json", '{"traceEvents": [\n' + ",\n".join(lines) + "\n]}")
    rss, msg = peak_rss_mb_of_summarize(path)
    assert msg == "ok"
    assert rss < 200, f"peak RSS {rss:.0f} MB"


_names = st.text(alphabet=st.sampled_from(list('ab},{[]"\\ \n:é')), max_size=8)
_events = st.lists(
    st.fixed_dictionaries(
        {"ph": st.sampled_from(["X", "i", "M"]), "name": _names, "ts": st.floats(0, 1e6), "pid": st.integers(0, 3)},
        optional={
            "dur": st.floats(0, 1e3),
            "cat": st.sampled_from(["kernel", "cpu_op", "cuda_runtime"]),
            "args": st.fixed_dictionaries({}, optional={"correlation": st.integers(0, 9), "name": _names, "list": st.lists(st.fixed_dictionaries({"x": _names}), max_size=3)}),
        },
    ),
    max_size=12,
)  # fmt: skip


@contextlib.contextmanager
def separators_found(by: str) -> Iterator[None]:
    """The fast reader's separators found by StringZilla (the ``fast`` extra) or, as without it,
    by :meth:`bytes.split`."""
    assert reader_module._stringzilla() is not None, "stringzilla (the fast extra) is in the dev group"
    with pytest.MonkeyPatch.context() as patch:
        if by == "bytes.split":
            patch.setattr(reader_module, "_stringzilla", lambda: None)
        yield


SPLITTERS = ["stringzilla", "bytes.split"]


@pytest.mark.parametrize("by", SPLITTERS)
@settings(max_examples=60, deadline=None)
@given(events=_events, indent=st.sampled_from([None, 2]), chunk=st.sampled_from([7, 64, 1 << 20]))
def test_fast_and_standard_readers_agree(
    tmp_path_factory: Any, events: list[dict[str, Any]], indent: int | None, chunk: int, by: str
) -> None:
    """Separators inside strings and nested lists, chunk edges anywhere: the same records."""
    assert fast_decoder() is not None, "msgspec (the fast extra) is in the dev group"
    path = tmp_path_factory.mktemp("fast") / "t.json"
    path.write_text(json.dumps({"traceEvents": events, "tail": 1}, indent=indent, ensure_ascii=False), encoding="utf-8")
    with (
        separators_found(by),
        TraceReader(path, chunk_chars=chunk, fast=True) as fast,
        TraceReader(path, chunk_chars=chunk, fast=False) as slow,
    ):
        assert list(fast.records()) == list(slow.records())


def _fields(event: Any) -> tuple[Any, ...]:
    if isinstance(event, dict):
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        return (event.get("ph"), event.get("name"), event.get("ts"), event.get("dur"), args.get("correlation"))
    return (event.ph, event.name, event.ts, None if math.isnan(event.dur) else event.dur, event.args.correlation)


@pytest.mark.parametrize("by", SPLITTERS)
@settings(max_examples=60, deadline=None)
@given(
    events=_events,
    layout=st.sampled_from([{"indent": None}, {"indent": 2}, {"separators": (",", ":")}, {"indent": "\t"}]),
    chunk=st.sampled_from([7, 64, 300, 1 << 20]),
    ascii_only=st.booleans(),
)
def test_byte_batches_place_events_as_the_standard_reader_does(
    tmp_path_factory: Any, events: list[dict[str, Any]], layout: dict[str, Any], chunk: int, ascii_only: bool, by: str
) -> None:
    """The columnar path's batches (decoded from bytes, spans from the separators, numpy arrays):
    each event where the standard reader finds it, in characters, whatever the layout, non-ASCII
    text, chunk edges or what finds the separators."""
    from profwin_traces.columnar import column_decoder

    decode = column_decoder()
    assert decode is not None, "numpy and msgspec (the fast extra) are in the dev group"
    path = tmp_path_factory.mktemp("bytes") / "t.json"
    text = json.dumps({"head": "é", "traceEvents": events, "tail": 1}, ensure_ascii=ascii_only, **layout)
    path.write_text(text, encoding="utf-8")
    with TraceReader(path, chunk_chars=chunk, fast=False) as slow:
        expected = [(_fields(e), offset, length) for e, offset, length in slow.raw_events()]
    with separators_found(by), TraceReader(path, chunk_chars=chunk) as fast:
        found = [
            (_fields(e), int(offset), int(length))
            for batch, offsets, lengths in fast.event_batches(decode)
            for e, offset, length in zip(batch, offsets, lengths, strict=True)
        ]
        assert fast.header == {"head": "é", "tail": 1}
    assert found == expected
    for i, (_, offset, length) in enumerate(found):
        assert json.loads(text[offset : offset + length]) == events[i]


@pytest.mark.parametrize("by", SPLITTERS)
@pytest.mark.parametrize("mark", ["✓", "#"], ids=["non-ASCII", "ASCII"])
@pytest.mark.parametrize("chunk", [300, 4096, 1 << 20])
def test_byte_batches_take_most_events_of_a_kineto_layout(tmp_path: Path, chunk: int, mark: str, by: str) -> None:
    """Kineto's layout, ASCII (spans in bytes) or not (in characters): all but the first and
    last event of each buffer come from the batch decoder, at the standard reader's places."""
    from profwin_traces.columnar import column_decoder

    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"aten::mm {mark}{i % 7}", "pid": 1, "tid": 2, "ts": 10.0 * i, "dur": 5.0,
         "args": {"External id": i, "Input Dims": [[4, 4], []]}}
        for i in range(400)
    ]  # fmt: skip
    path = write(tmp_path / "t.json", json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=2, ensure_ascii=False))
    with TraceReader(path, chunk_chars=chunk, fast=False) as slow:
        expected = [(offset, length) for _, offset, length in slow.raw_events()]
    with separators_found(by), TraceReader(path, chunk_chars=chunk) as fast:
        batches = list(fast.event_batches(column_decoder()))  # type: ignore[arg-type]
    found = [(int(o), int(n)) for _, offsets, lengths in batches for o, n in zip(offsets, lengths, strict=True)]
    assert found == expected
    typed = sum(len(batch) for batch, _, _ in batches if not isinstance(batch[0], dict))
    assert typed >= 0.9 * len(events), typed


def test_too_many_step_markers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "MAX_MARKERS", 5)
    path = write(tmp_path / "steps.json", doc([step(k, 10.0 * k) for k in range(6)]))
    assert error(path) == "more than 5 torch step markers"
    assert summarize(write(tmp_path / "five.json", doc([step(k, 10.0 * k) for k in range(5)]))).steps[-1].number == 4


@pytest.mark.parametrize("env", [{}, {"OMP_NUM_THREADS": "4"}, {"OPENBLAS_NUM_THREADS": "3"}])
def test_trace_commands_start_numpy_with_one_blas_thread(tmp_path: Path, env: dict[str, str]) -> None:
    """The trace tools make no BLAS call: the CLI's summarize loads numpy with one OpenBLAS
    thread unless the user chose a number; the process's other variables are left alone."""
    path = write(tmp_path / "t.json", doc([step(0), step(1, 10.0)]))
    code = (
        "import os, sys\n"
        "from profwin.cli import main\n"
        "assert 'numpy' not in sys.modules\n"
        "main(['summarize', sys.argv[1]])\n"
        "print('numpy' in sys.modules, os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True, env={**clean, **env}
    )
    last = done.stdout.strip().splitlines()[-1]
    assert last == {"OPENBLAS_NUM_THREADS": "True 3", "OMP_NUM_THREADS": "True None"}.get(next(iter(env), ""), "True 1")
