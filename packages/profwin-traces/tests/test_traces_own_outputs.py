"""profwin's own outputs feed its own tools: the demo's traces (windowed and full), trimmed traces,
and folders of collected traces, through ``profwin summarize``, ``diff`` and ``trim``.

Every trace profwin writes must load in Perfetto and chrome://tracing: :func:`check_chrome_trace`
checks the Trace Event Format (the JSON Object Format of the spec) independently of profwin's
reader, with ``json`` from the standard library.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from profwin.cli import main
from profwin.provenance import sidecar_path
from profwin_traces import diff, render_summary, summarize, trim
from profwin_traces.provenance import read_sidecar

pytestmark = pytest.mark.torch

# Trace Event Format: the phases a viewer understands, and the fields each needs.
_PHASES = set("BEXiIbneCMsftPOND(R)") | {"v", "V", "c"}


def load(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)  # type: ignore[no-any-return]


def check_chrome_trace(path: Path) -> dict[str, Any]:
    """Assert ``path`` is a Chrome trace in the JSON Object Format: an object whose
    ``traceEvents`` is a list of events, each with a known ``ph``; every event but metadata has
    a numeric ``ts``, ``pid`` and ``tid``; complete events a ``dur`` >= 0; begin/end pairs
    balance per thread; ``displayTimeUnit``, when present, is ``ms`` or ``ns``. Returns the trace."""
    trace = load(path)
    assert isinstance(trace, dict), "JSON Object Format"
    assert isinstance(trace.get("traceEvents"), list), "JSON Object Format"
    assert trace.get("displayTimeUnit", "ms") in ("ms", "ns")
    open_spans: Counter[tuple[Any, Any]] = Counter()
    for event in trace["traceEvents"]:
        assert isinstance(event, dict), event
        ph = event.get("ph")
        assert ph in _PHASES, event
        if ph == "M":
            assert isinstance(event.get("name"), str), event
            assert isinstance(event.get("args"), dict), event
            continue
        assert type(event.get("ts")) in (int, float), event
        assert "pid" in event, event
        assert "tid" in event, event
        if ph == "X":
            assert type(event.get("dur", 0)) in (int, float), event
            assert event.get("dur", 0) >= 0, event
        if ph in ("B", "E"):
            open_spans[(event["pid"], event["tid"])] += 1 if ph == "B" else -1
            assert open_spans[(event["pid"], event["tid"])] >= 0, f"E before its B: {event}"
    assert not +open_spans, f"unbalanced B/E: {dict(+open_spans)}"
    return trace


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``profwin demo --compare-full`` run as a user runs it, in a fresh process."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("demo")
    done = subprocess.run(
        [sys.executable, "-m", "profwin.cli", "demo", "--steps", "30", "--window", "10:20", "--compare-full", "--quiet",
         "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "view: open any of these 2 files in https://ui.perfetto.dev" in done.stdout
    return out


def full_trace(demo_dir: Path) -> Path:
    (path,) = demo_dir.glob("*_full_*steps.pt.trace.json.gz")
    return path


def windowed_trace(demo_dir: Path) -> Path:
    (path,) = demo_dir.glob("*_rank0_w10-20.*.pt.trace.json.gz")
    return path


def test_the_full_trace_is_summarized_by_step(demo_dir: Path) -> None:
    summary = summarize(full_trace(demo_dir), window="10:20")
    assert [st.number for st in summary.steps] == list(range(30))
    assert summary.selected == "10:20"
    assert summary.trace.provenance is not None
    assert summary.trace.provenance["steps"] == "0:30"
    assert summary.top_ops
    assert all(o.total_us >= o.self_us for o in summary.top_ops)


def test_the_windowed_trace_says_where_it_came_from(demo_dir: Path) -> None:
    trace = check_chrome_trace(windowed_trace(demo_dir))
    origin = trace["profwin"]
    assert (origin["window"], origin["first_step"], origin["engine"], origin["rank"]) == ("10:20", 10, "torch", 0)
    assert origin["session"]
    assert origin["version"]
    text = render_summary(summarize(windowed_trace(demo_dir)))
    assert f"session {origin['session']}" in text


def test_diff_of_the_windowed_and_the_full_trace(demo_dir: Path) -> None:
    result = diff(windowed_trace(demo_dir), full_trace(demo_dir), window="10:20")
    assert (result.a_steps, result.b_steps) == (10, 10)
    assert [s.step for s in result.steps] == list(range(10, 20))
    assert not result.unchanged
    same = diff(windowed_trace(demo_dir), windowed_trace(demo_dir))
    assert same.unchanged


def test_cli_diff_of_a_trace_with_itself_says_no_change(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(windowed_trace(demo_dir)), str(windowed_trace(demo_dir))]) == 0
    out = capsys.readouterr().out
    assert "no change: the 10 steps and every operator's self time per step are the same in A and B" in out
    assert "step            A" not in out


def test_trimmed_traces_load_in_viewers_and_keep_their_origin(demo_dir: Path, tmp_path: Path) -> None:
    for name in ("cut.pt.trace.json", "cut.pt.trace.json.gz"):
        result = trim(full_trace(demo_dir), "12:15", tmp_path / name)
        trace = check_chrome_trace(Path(result.path))
        origin = trace["profwin"]
        assert origin["steps"] == "12:15"
        assert origin["source"] == str(full_trace(demo_dir))
        assert origin["engine"] == "torch"  # carried over from the full trace's own provenance
        assert next(iter(trace)) == "profwin"  # before the events, where a quick look finds it
        assert [st.number for st in summarize(tmp_path / name).steps] == [12, 13, 14]


def test_cli_trim_writes_to_output_and_says_how_to_view(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "w.pt.trace.json.gz"
    assert main(["trim", str(full_trace(demo_dir)), "--window", "11:13", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"view: open {out} in https://ui.perfetto.dev (Open trace file) or in Chrome at chrome://tracing" in text
    check_chrome_trace(out)


def test_summary_table_reads_like_key_averages(demo_dir: Path) -> None:
    summary = summarize(full_trace(demo_dir), window="10:20", top=5)
    text = render_summary(summary)
    assert "self  self %        total    calls   self/call  total/call   self/step  name" in text
    assert "* = in the window summarized (10:20)" in text
    # Kineto's own lanes (pids "Spans", "Traces", "") are summed up in one line, not listed.
    assert "pid Spans" not in text
    assert "pid Traces" not in text
    assert "lanes of the profiler's own markers" in text
    top = summary.top_ops[0]
    assert f"{100 * top.self_us / summary.ops_self_us:.1f}%" in text


def test_a_window_never_reached_is_one_line_and_fails(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "profwin.cli", "demo", "--steps", "5", "--window", "20:40", "--quiet", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "profwin: nothing was recorded: window 20:40 was never reached: the session ran 5 step(s) (the last was step 4), "
        "and recording starts at step 20; run at least 21 steps (--steps) or choose a window inside them (--window)\n"
    )


def test_a_folder_with_two_sessions_of_one_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    for window in ("1:4", "2:6"):
        assert main(["demo", "--steps", "8", "--window", window, "--quiet", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    older, newer = sorted(tmp_path.glob("*.pt.trace.json.gz"), key=lambda p: "w1-4" not in p.name)
    os.utime(older, (1_000_000, 1_000_000))  # the first session is the older one, whatever the clock did
    assert main(["summarize", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    newest = load(newer)["profwin"]["session"]
    assert f"up to 2 traces per rank here (several profiling sessions); summarizing each rank's newest (session {newest})" in out
    assert "choose another with --session ID" in out
    assert main(["summarize", str(tmp_path), "--json"]) == 0
    assert [r["steps"] for r in json.loads(capsys.readouterr().out)["ranks"]] == [4]  # steps 2..5, the newer session
    first = load(older)["profwin"]["session"]
    assert main(["summarize", str(tmp_path), "--session", first[:-3], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["steps"] for r in data["ranks"]] == [3]
    assert main(["summarize", str(tmp_path), "--session", "nope"]) == 2
    assert "session: 'nope' matches no session; the traces hold: " in capsys.readouterr().err


def test_one_trace_is_summarized_only_for_its_own_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--steps", "6", "--window", "1:4", "--quiet", "--out", str(tmp_path)]) == 0
    (trace,) = tmp_path.glob("*.pt.trace.json.gz")
    own = load(trace)["profwin"]["session"]
    capsys.readouterr()
    assert main(["summarize", str(trace), "--session", own[:10], "--json"]) == 0
    assert [s["number"] for s in json.loads(capsys.readouterr().out)["steps"]] == [1, 2, 3]
    assert main(["summarize", str(trace), "--session", "nope"]) == 2
    assert capsys.readouterr().err == f"profwin: error: session: 'nope' matches no session; the traces hold: {own}\n"


def test_the_session_choice_is_made_on_facts_alone() -> None:
    """What profwin-ray sends from the nodes (:class:`TraceFacts`) is all the choice needs."""
    from profwin_traces import TraceFacts, choose_session

    facts = [
        TraceFacts("n0/a", rank=0, session="s1-a", mtime_ns=1),
        TraceFacts("n0/b", rank=0, session="s2-b", mtime_ns=5),
        TraceFacts("n1/c", rank=1, session="s2-c", mtime_ns=4),
        TraceFacts("n1/d", rank=1, session="s1-d", mtime_ns=2),
    ]
    chosen, notes = choose_session(facts)
    assert [f.path for f in chosen] == ["n0/b", "n1/c"]  # each rank's newest, in the order given
    assert notes == [
        "up to 2 traces per rank here (several profiling sessions); summarizing each rank's newest "
        "(session s2-b, s2-c); choose another with --session ID"
    ]
    chosen, notes = choose_session(facts, "s1")
    assert [f.path for f in chosen] == ["n0/a", "n1/d"]
    assert notes == ["session s1-a, s1-d: 2 of 4 traces"]
    assert choose_session(facts[:1] + facts[2:3]) == (facts[:1] + facts[2:3], [])  # no choice to make
    copies = [TraceFacts("x", rank=0, session=None, mtime_ns=1), TraceFacts("y", rank=0, session=None, mtime_ns=2)]
    assert choose_session(copies) == (copies, [])  # not told apart: summarizing says rank 0 twice


def test_yaml_base60_window_is_explained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("yaml")
    spec = tmp_path / "spec.yaml"
    spec.write_text("window: 20:40\n")
    assert main(["validate", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "(line 1, column 9): 20:40 is read by YAML as the base-60 number 1240, not as the text '20:40'" in err
    assert 'quote it: "20:40"' in err
    spec.write_text('window: "20:40"\n')
    assert main(["validate", str(spec)]) == 0


def test_collected_traces_carry_a_sidecar(tmp_path: Path) -> None:
    """What remote sessions write next to an engine's trace, and what the tools read back:
    order-numbered (vLLM-like) steps keep their session numbers without --first-step."""
    from profwin.provenance import write_sidecar

    events = [
        {"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_1(1)", "pid": 1, "tid": 1,
         "ts": 100.0 * k, "dur": 50.0}
        for k in range(3)
    ]  # fmt: skip
    trace = tmp_path / "dp0_pp0_tp0_rank0.123.pt.trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    write_sidecar(trace, {"steps": "20:23", "first_step": 20, "engine": "vllm", "rank": 0, "session": "s1"})
    assert read_sidecar(trace)["engine"] == "vllm"
    assert [st.number for st in summarize(trace).steps] == [20, 21, 22]
    assert [st.number for st in summarize(trace, first_step=0).steps] == [0, 1, 2]
    assert not list(tmp_path.glob(".*")), "written atomically: no temporary file left"
    assert sidecar_path(trace).name == trace.name + ".profwin.json"
    assert main(["summarize", str(tmp_path), "--json"]) == 0  # the sidecar is not taken for a trace
