"""profwin against the real verl 0.9.1: its dataclasses, its shipped YAML files, and enable() on its modules.

The checks run in verl's environment (verl_checks.py); these tests assert on what they print.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_json

pytestmark = pytest.mark.verl


@pytest.fixture(scope="module")
def dataclass_results(verl_python: Path, profwin_sites: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    return run_json(verl_python, profwin_sites["plugin"], "verl_checks.py", "dataclasses", cwd=tmp_path_factory.mktemp("cwd"))


@pytest.fixture(scope="module")
def yaml_results(verl_python: Path, profwin_sites: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    cwd = tmp_path_factory.mktemp("cwd")
    return cwd, run_json(verl_python, profwin_sites["plugin"], "verl_checks.py", "yaml", cwd=cwd)


@pytest.fixture(scope="module")
def composed_results(verl_python: Path, profwin_sites: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    return run_json(verl_python, profwin_sites["plugin"], "verl_checks.py", "composed", cwd=tmp_path_factory.mktemp("cwd"))


def test_verl_tool_dataclasses_are_read_as_verl_reads_them(dataclass_results: Any) -> None:
    torch_tool = dataclass_results["torch_tool"]
    assert (torch_tool["window"], torch_tool["activities"], torch_tool["record"]) == ("3:9 tokens", ["cpu", "cuda"], [])
    # A non-empty contents without cuda records CPU only (verl's get_torch_profiler).
    assert dataclass_results["torch_tool_stack_only"]["activities"] == ["cpu"]
    assert dataclass_results["torch_tool_stack_only"]["record"] == ["stack"]
    npu = dataclass_results["npu_tool"]
    assert (npu["activities"], npu["record"], npu["options"]) == (
        ["cpu", "npu"],
        ["modules"],
        {"npu": {"level": "level1", "analysis": False}},
    )
    assert dataclass_results["npu_tool_empty"]["activities"] == ["cpu"]  # verl's NPU profiler: NPU only when listed
    assert dataclass_results["memory_tool"]["options"] == {"memory": {"max_entries": 5000, "context": "all", "stacks": "all"}}


def test_disabled_configs_are_disabled_not_profile_everything(dataclass_results: Any) -> None:
    default = dataclass_results["default_profiler"]
    assert (default["enabled"], default["spec"]) == (False, None)
    assert dataclass_results["default_profiler_spec"]["error"] == "ProfilingDisabled"
    assert dataclass_results["disabled"]["reason"] == "enable is false"
    assert dataclass_results["tool_null"]["reason"] == "tool is null"


def test_profiler_config_with_omegaconf_tool_config(dataclass_results: Any) -> None:
    result = dataclass_results["dictconfig_tool_config"]
    assert result["enabled"]
    assert result["spec"]["activities"] == ["cpu", "cuda"]  # the nested ListConfig ['cuda'] was converted


def test_tools_map_to_plugins_and_undriven_tools_are_refused_by_name(dataclass_results: Any) -> None:
    assert dataclass_results["enabled"]["plugins"] == ["torch", "vllm", "sglang"]
    assert dataclass_results["enabled"]["spec"]["ranks"] == [2, 9]
    assert dataclass_results["memory_profiler"]["plugins"] == ["memory"]
    for tool in ("nsys", "precision_debugger"):
        error = dataclass_results[tool]
        assert (error["error"], error["path"]) == ("ConfigError", "tool")
        assert f"profwin does not drive tool {tool!r}" in error["message"]


def test_shipped_yaml_files_profile_nothing_by_default(yaml_results: Any) -> None:
    _, results = yaml_results
    shipped = results["shipped"]
    for key in ("trainer_rollout", "trainer_actor", "trainer_global", "rollout_yaml"):
        assert shipped[key]["enabled"] is False, key
        assert shipped[key]["reason"] == "tool is null", key
    assert shipped["profiler_yaml"]["reason"] == "enable is false"  # profiler.yaml has tool: torch, enable: False
    assert shipped["load_spec_rollout"]["error"] == "ProfilingDisabled"
    assert shipped["trainer_whole"]["path"] == "at"
    assert shipped["bad_at"]["message"] == "at: no key 'profilr' under actor_rollout_ref.rollout (did you mean 'profiler'?)"


def test_trainer_file_with_overrides_resolves_interpolations(yaml_results: Any) -> None:
    cwd, results = yaml_results
    overridden = results["overridden"]
    rollout = overridden["file"]
    # tool, enable, ranks, contents and discrete come into the rollout block through ${oc.select:...}.
    assert (rollout["enabled"], rollout["tool"], rollout["steps"], rollout["ranks"], rollout["discrete"]) == (
        True,
        "torch",
        [2, 4],
        [0, 3],
        True,
    )
    assert rollout["spec"]["window"] == "20:80 tokens"
    assert rollout["spec"]["activities"] == ["cpu", "cuda"]
    assert rollout["spec"]["record"] == ["stack"]
    assert rollout["spec"]["output_dir"] == str(cwd / "prof")  # save_path is relative to the working directory
    assert overridden["actor"]["spec"]["window"] == "0:"  # the token window is rollout's only
    # The same block as an OmegaConf node and as verl's own dataclass reads the same.
    for other in ("dictconfig_node", "verl_dataclass"):
        assert {**overridden[other], "steps": None} == {**rollout, "steps": None}, other
    assert overridden["verl_tool_dataclass"]["window"] == "20:80 tokens"
    assert overridden["load_spec"] == {k: rollout["spec"][k] for k in overridden["load_spec"]}


def test_cli_validate_at_key_path(yaml_results: Any) -> None:
    _, results = yaml_results
    cli = results["overridden"]["cli"]
    assert cli["rc"] == 0, cli["stderr"]
    summary = json.loads(cli["stdout"])
    assert (summary["valid"], summary["enabled"], summary["window"], summary["ranks"]) == (True, True, "20:80 tokens", [0, 3])
    default = results["overridden"]["cli_default"]
    assert default["rc"] == 0
    assert "valid, profiles nothing" in default["stdout"]
    assert "tool is null" in default["stdout"]


def test_enable_swaps_verl_functions_in_every_verl_module(verl_python: Path, profwin_sites: dict[str, Path]) -> None:
    result = run_json(verl_python, profwin_sites["plugin"], "verl_checks.py", "patch")
    names = ("build_vllm_profiler_args", "build_sglang_profiler_args", "rollout_trace_dir",
             "rollout_profiler_global_ranks", "rollout_trace_local_rank", "relocate_rollout_traces")  # fmt: skip
    swapped = sorted(f"{module}.{name}" for module in ("verl.utils.profiler", "verl.utils.profiler.config") for name in names)
    # verl's SGLang server stop is wrapped when its module is imported (not in this process).
    expected = sorted([*swapped, "verl.workers.rollout.sglang_rollout.async_sglang_server (when imported)"])
    assert sorted(result["first"]) == expected
    assert all(result["holders"].values())
    assert result["late_import_is_profwin"]
    assert result["second"] == []  # idempotent
    assert sorted(result["restored"]) == expected
    assert result["back"]
    assert result["refused"] == {
        "result": [],
        "warnings": [
            "profwin-verl left verl unpatched (verl's own rollout profiling stays in place): profwin-verl supports "
            "verl>=0.9,<0.10, and verl is 0.10.0: its seams may differ (enable(force=True) tries anyway)"
        ],
    }
    assert sorted(result["forced"]) == expected
    assert result["autopatch"] == "True"  # VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch


def test_autopatch_never_breaks_import_verl(verl_python: Path, profwin_sites: dict[str, Path], tmp_path: Path) -> None:
    """A verl profwin does not support (the real package, its version file and metadata saying
    0.10.0): verl imports, stays unpatched, and one warning says why (enable() never raises: the
    same refusal called directly is test_enable_swaps_verl_functions_in_every_verl_module's)."""
    result = run_json(verl_python, profwin_sites["plugin"], "verl_checks.py", "autopatch_unsupported", str(tmp_path))
    assert result["rc"] == 0, result
    assert result["stdout"] == {"verl": "0.10.0", "unpatched": True}
    assert not result["traceback"]
    (warning,) = result["warnings"]
    assert "profwin-verl left verl unpatched" in warning
    assert "verl is 0.10.0" in warning


def test_without_a_window_profwin_builds_what_verl_builds(
    verl_python: Path, profwin_sites: dict[str, Path], tmp_path: Path
) -> None:
    """No profile_token_start/end: the same launch arguments, environment and start_profile keywords
    as verl 0.9.1's own builders (vLLM delay 0, not 1; SGLang None/None, not the relative encoding)."""
    result = run_json(verl_python, profwin_sites["plugin"], "verl_checks.py", "no_window", str(tmp_path / "prof"))
    assert result["profwin"] == result["verl"]
    assert json.loads(result["verl"]["vllm"]["profiler_config"])["delay_iterations"] == 0


def test_a_users_file_read_alone_means_what_verl_merges_it_into(composed_results: Any) -> None:
    """Files with only what users change (verl_checks.USER_FILES, verl's docs examples among them),
    read by profwin alone, against verl's own reading of them merged onto its trainer config: every
    field the same, and verl's ProfilerConfig agrees (before profwin filled in what a block leaves
    out as verl does, 13 of these 18 readings differed: another tool, folder or enable, or an error).
    The rollout's block is profiled where verl's own rollout server code starts the engine's
    profiler (torch or npu, discrete mode: a window there without discrete records nothing)."""
    assert len(composed_results) == 21
    for case, result in composed_results.items():
        alone, composed, verl = result["profwin"], result["profwin_composed"], result["verl"]
        assert "error" not in alone, (case, alone)
        assert "error" not in composed, (case, composed)
        assert {**alone, "reason": ""} == {**composed, "reason": ""}, case
        if verl is None:  # global_profiler: verl builds no ProfilerConfig of a role from it
            continue
        window = verl["window"]
        expected = {
            "tool": verl["tool"] if verl["tool"] in ("torch", "npu", "torch_memory") else None,
            "enabled": bool(verl["enable"] and verl["tool"]),
            "all_ranks": verl["all_ranks"],
            "ranks": verl["ranks"],
            "save_path": verl["save_path"],
            "relocate_results": verl["relocate_results"],
            "discrete": verl["discrete"],
        }
        assert {key: alone[key] for key in expected if key != "enabled"} == {
            k: v for k, v in expected.items() if k != "enabled"
        }, case
        if case.endswith(":actor_rollout_ref.rollout.profiler"):
            assert result["profwin_replica0"] == verl["rollout_server_profiles"], case
        else:
            assert alone["enabled"] == expected["enabled"], case
        if alone["enabled"]:
            tokens = window != [None, None]
            assert alone["spec"]["window"] == (f"{window[0] or 0}:{window[1] or ''} tokens" if tokens else "0:"), case
    rollout = composed_results["rollout_follows_actor:actor_rollout_ref.rollout.profiler"]["profwin"]
    assert (rollout["enabled"], rollout["ranks"], rollout["discrete"], rollout["save_path"]) == (True, [0, 3], True, "/data/prof")
    assert rollout["spec"]["window"] == "20:80 tokens"
    not_discrete = composed_results["rollout_not_discrete:actor_rollout_ref.rollout.profiler"]
    assert (not_discrete["verl"]["rollout_server_profiles"], not_discrete["profwin"]["enabled"]) == (False, False)
    assert not_discrete["profwin"]["reason"].startswith(
        "discrete is false: verl's vLLM and SGLang rollout servers start the engine profiler only"
    )
    unset = composed_results["docs_end_to_end:actor_rollout_ref.actor.profiler"]["profwin"]
    assert unset["reason"] == (
        "tool is null: the block sets no tool, and verl takes global_profiler.tool, which this document does not set either"
    )
