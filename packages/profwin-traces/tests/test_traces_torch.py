"""profwin_traces on a trace written by a real profwin.Session with the torch driver (CPU).

The expected values are computed from the same file with json.load, independently of the
streaming reader: marker durations, event counts per step and the set of events trim keeps.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin_traces import render_summary, summarize, trim

pytestmark = pytest.mark.torch

WINDOW = profwin.Window(2, 6)


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("session")
    spec = profwin.ProfileSpec(window=WINDOW, output_dir=out, shapes=True)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    with profwin.Session(spec, profiler="torch") as session:
        for _ in range(8):
            model(torch.randn(2, 16)).sum().backward()
            session.step()
    (artifact,) = session.artifacts
    assert artifact.path.name.endswith(".pt.trace.json.gz")
    return artifact.path


def load(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)  # type: ignore[no-any-return]


def markers(trace: dict[str, Any]) -> dict[int, dict[str, Any]]:
    found = {}
    for e in trace["traceEvents"]:
        m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name")))
        if m and e.get("ph") == "X":
            found[int(m.group(1))] = e
    return found


def test_summarize_a_session_trace(torch_trace: Path) -> None:
    trace = load(torch_trace)
    expected = markers(trace)
    s = summarize(torch_trace)
    assert s.producer == "torch"
    assert sorted(expected) == [st.number for st in s.steps] == list(range(WINDOW.start, WINDOW.end or 0))
    assert [st.dur_us for st in s.steps] == [round(expected[k]["dur"], 3) for k in sorted(expected)]
    for st in s.steps:
        m = expected[st.number]
        inside = [e for e in trace["traceEvents"] if e.get("ph") != "M" and m["ts"] <= e.get("ts", -1) < m["ts"] + m["dur"]]
        assert st.events == len(inside)
    assert s.trace.events == len(trace["traceEvents"])
    assert s.trace.compressed
    assert s.trace.top_level_keys == tuple(trace)
    assert sum(st.bytes for st in s.steps) + s.bytes_outside_steps == s.trace.event_bytes
    # Each step runs Linear -> addmm; self time is never more than wall time.
    assert "aten::addmm" in {o.name for o in s.top_ops}
    assert sum(o.self_us for o in s.top_ops) <= s.step_us["total"]
    assert any(t.thread.startswith("thread ") and t.process for t in s.threads)
    text = render_summary(s)
    assert f"{len(expected)} torch steps (2..5)" in text
    json.dumps(s.to_dict())  # --json output is plain data


def test_trim_a_session_trace(torch_trace: Path, tmp_path: Path) -> None:
    source = load(torch_trace)
    out = tmp_path / "steps3-5.pt.trace.json.gz"
    result = trim(torch_trace, profwin.Window(3, 5), out)
    trimmed = load(out)
    assert sorted(markers(trimmed)) == [3, 4]
    assert result.steps == "3:5"
    assert result.bytes == out.stat().st_size
    # Exactly the events that overlap steps 3..4 in time, plus all metadata, in file order.
    t0, t1 = markers(source)[3]["ts"], markers(source)[4]["ts"] + markers(source)[4]["dur"]
    kept = [
        e
        for e in source["traceEvents"]
        if e.get("ph") == "M" or (e["ts"] < t1 and (e["ts"] + e.get("dur", 0) > t0 or e["ts"] >= t0))
    ]
    assert trimmed["traceEvents"] == kept
    assert result.events == len(kept)
    assert [k for k in trimmed if k != "profwin"] == [k for k in source if k != "profwin"]
    assert {k: v for k, v in trimmed.items() if k not in ("traceEvents", "profwin")} == {
        k: v for k, v in source.items() if k not in ("traceEvents", "profwin")
    }
    # The provenance is the source's (session, rank, engine), with the steps now in the file.
    assert trimmed["profwin"] == {**source["profwin"], "first_step": 3, "window": "3:5", "steps": "3:5",
                                  "producer": "torch", "source": str(torch_trace)}  # fmt: skip
    again = summarize(out)
    assert [st.number for st in again.steps] == [3, 4]
    original = summarize(torch_trace, window="3:5")
    assert [st.dur_us for st in again.steps] == [st.dur_us for st in original.steps if st.in_window]
    assert again.top_ops == original.top_ops


@pytest.mark.parametrize("form", [[], ["--json"], ["--window", "3:5", "--top", "3"]])
def test_a_folder_of_one_trace_reads_as_the_trace(
    torch_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], form: list[str]
) -> None:
    """``profwin summarize DIR`` with one trace in DIR prints what ``profwin summarize FILE`` does
    (the operator table included): one trace, one answer, however it is named."""
    from profwin.cli import main

    folder = tmp_path / "one"
    folder.mkdir()
    trace = folder / torch_trace.name
    trace.write_bytes(torch_trace.read_bytes())
    assert main(["summarize", str(trace), *form]) == 0
    as_file = capsys.readouterr().out
    assert main(["summarize", str(folder), *form]) == 0
    as_folder = capsys.readouterr().out
    assert as_folder == as_file
    if not form:
        assert "top operators by self time" in as_file


def test_cli_summarize_and_trim_a_session_trace(torch_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from profwin.cli import main
    from profwin.demo import count_step_markers

    assert main(["summarize", str(torch_trace), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [s["number"] for s in summary["steps"]] == [2, 3, 4, 5]
    out = tmp_path / "trimmed" / "t.pt.trace.json.gz"
    out.parent.mkdir()
    assert main(["trim", str(torch_trace), "--window", "3:5", "-o", str(out)]) == 0
    assert count_step_markers(out) == [3, 4]
    assert main(["trim", str(torch_trace), "--window", "20:30", "-o", str(tmp_path / "none.json")]) == 2
    assert "20:30" in capsys.readouterr().err
    assert not (tmp_path / "none.json").exists()
