"""Reading verl profiler configs with verl's meaning: profwin_verl.load_verl, spec_from_verl, load_spec(at=).

verl itself is not installed here: these use the plain-dict and OmegaConf forms of its blocks
(integration_tests/verl runs the same readers on verl's real dataclasses and shipped YAML files).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from profwin import ConfigError, ProfilingDisabled, Window, load_spec
from profwin.cli import main
from profwin_verl import VerlProfiling, load_verl, spec_from_verl

TORCH = {"contents": ["cuda", "stack"], "discrete": True, "profile_token_start": 20, "profile_token_end": 80}


def role(**changes: Any) -> dict[str, Any]:
    block: dict[str, Any] = {
        "tool": "torch",
        "enable": True,
        "all_ranks": False,
        "ranks": [],
        "save_path": "outputs/profile",
        "tool_config": {"torch": dict(TORCH), "npu": {"contents": [], "level": "level1", "analysis": True}},
    }
    block.update(changes)
    return block


# A trainer document shaped like verl's _generated_ppo_trainer.yaml: the rollout block takes its
# switches from the actor's and from global_profiler through ${oc.select:...}.
TRAINER_YAML = """
global_profiler:
  tool: {tool}
  steps: {steps}
  save_path: prof
actor_rollout_ref:
  actor:
    profiler:
      tool: ${{oc.select:global_profiler.tool,null}}
      enable: true
      ranks: [0, 5]
      save_path: ${{oc.select:global_profiler.save_path,null}}
      tool_config:
        torch: {{contents: [stack], discrete: true}}
  rollout:
    profiler:
      tool: ${{oc.select:global_profiler.tool,null}}
      enable: ${{oc.select:actor_rollout_ref.actor.profiler.enable,false}}
      ranks: ${{oc.select:actor_rollout_ref.actor.profiler.ranks,[]}}
      save_path: ${{oc.select:global_profiler.save_path,null}}
      tool_config:
        torch:
          contents: ${{oc.select:actor_rollout_ref.actor.profiler.tool_config.torch.contents,[]}}
          discrete: ${{oc.select:actor_rollout_ref.actor.profiler.tool_config.torch.discrete,false}}
          profile_token_start: 20
          profile_token_end: 80
"""


def test_enabled_role_block() -> None:
    result = load_verl(role(ranks=[1, 4]))
    assert isinstance(result, VerlProfiling)
    assert (result.enabled, result.reason, result.tool, result.plugins) == (True, "", "torch", ("torch", "vllm", "sglang"))
    assert result.spec is not None
    assert (result.spec.window, result.spec.activities, result.spec.records()) == (
        Window(20, 80, unit="tokens"),
        ("cpu", "cuda"),
        ("stack",),
    )
    assert result.spec.ranks == (1, 4)
    assert (result.discrete, result.steps, result.save_path) == (True, None, "outputs/profile")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"enable": False}, "enable is false"),
        ({"tool": None}, "tool is null"),
        ({"tool": "???"}, "tool is not set"),
        ({"enable": False, "tool": None}, "tool is null"),
    ],
)
def test_disabled_role_blocks_have_no_spec(changes: dict[str, Any], reason: str) -> None:
    result = load_verl(role(**changes))
    assert (result.enabled, result.reason, result.spec) == (False, reason, None)
    assert not result.profiles_rank(0)
    assert not result.profiles_step(1)
    with pytest.raises(ProfilingDisabled, match=reason):
        spec_from_verl(role(**changes))


def test_missing_enable_follows_verl_in_load_verl_but_not_in_spec_from_verl() -> None:
    block = role()
    del block["enable"]
    assert load_verl(block).reason == "enable is false"  # verl's ProfilerConfig.enable defaults to False
    assert spec_from_verl(block).window == Window(20, 80, unit="tokens")  # asked for what the block records


@pytest.mark.parametrize(
    ("contents", "activities", "records"),
    [
        ([], None, ()),
        (["cuda"], ("cpu", "cuda"), ()),
        (["cpu"], ("cpu",), ()),
        (["stack", "shapes"], ("cpu",), ("shapes", "stack")),
        (["memory"], ("cpu",), ("memory",)),
    ],
)
def test_torch_contents_as_verl_reads_them(contents: list[str], activities: Any, records: tuple[str, ...]) -> None:
    spec = spec_from_verl({"contents": contents})
    assert (spec.activities, spec.records()) == (activities, records)


@pytest.mark.parametrize(
    ("contents", "activities", "records"),
    [([], ("cpu",), ()), (["npu"], ("cpu", "npu"), ()), (["module", "npu"], ("cpu", "npu"), ("modules",))],
)
def test_npu_contents_as_verl_reads_them(contents: list[str], activities: Any, records: tuple[str, ...]) -> None:
    spec = spec_from_verl({"contents": contents, "level": "level0"})
    assert (spec.activities, spec.records()) == (activities, records)
    assert spec.plugin_options("npu") == {"level": "level0"}


def test_contents_outside_the_tools_list_are_refused_with_their_path() -> None:
    with pytest.raises(ConfigError) as info:
        load_verl(role(tool_config={"torch": {"contents": ["cuda", "module"]}}))
    assert info.value.path == "tool_config.torch.contents[1]"
    assert "'module'" in str(info.value)


def test_torch_memory_maps_to_the_memory_plugin() -> None:
    block = role(tool="torch_memory", tool_config={"torch_memory": {"trace_alloc_max_entries": 500, "stack_depth": 8}})
    result = load_verl(block)
    assert result.plugins == ("memory",)
    assert result.spec is not None
    assert result.spec.plugin_options("memory") == {"max_entries": 500, "context": "all", "stacks": "all"}
    with pytest.raises(ConfigError, match="must be a positive int") as info:
        load_verl(role(tool="torch_memory", tool_config={"torch_memory": {"stack_depth": 0}}))
    assert info.value.path == "tool_config.torch_memory.stack_depth"


@pytest.mark.parametrize("tool", ["nsys", "precision_debugger"])
def test_undriven_tools_are_refused_by_name(tool: str) -> None:
    with pytest.raises(ConfigError, match=f"profwin does not drive tool '{tool}'") as info:
        load_verl(role(tool=tool), at=None)
    assert info.value.path == "tool"
    with pytest.raises(ConfigError, match="must be one of"):
        load_verl(role(tool="tensorboard"))


@pytest.mark.parametrize("tool", ["tensorboard", "", "9" * 5000, "nsys"])
def test_a_tool_argument_is_checked_as_a_tool_key_is(tool: str) -> None:
    """``spec_from_verl(block, tool=...)`` took any text and failed with a KeyError deep in (the
    bad-arguments catalogue: a 5,000-digit string)."""
    with pytest.raises(ConfigError, match=r"must be one of|profwin does not drive tool") as info:
        spec_from_verl({"contents": ["cpu"]}, tool=tool)
    assert info.value.path == "tool"


@pytest.mark.parametrize("tool", [["torch"], {"a": 1}, 3])
def test_a_tool_that_is_not_text_is_a_config_error(tool: Any) -> None:
    """A list given for ``tool`` raised ``TypeError: unhashable type`` from the lookup of tools not driven."""
    with pytest.raises(ConfigError, match=r"must be one of .* or null \(got ") as info:
        load_verl(role(tool=tool))
    assert info.value.path == "tool"


@pytest.mark.parametrize(
    ("changes", "path", "fragment"),
    [
        ({"enable": "yes"}, "enable", "true or false"),
        ({"ranks": [0, -1]}, "ranks[1]", "non-negative"),
        ({"ranks": 3}, "ranks", "list of ranks"),
        ({"save_path": ""}, "save_path", "non-empty path"),
        ({"profile_ranks": [1]}, "", "unknown key 'profile_ranks'"),
        (
            {"tool_config": {"torch": {"profile_token_start": 9, "profile_token_end": 3}}},
            "tool_config.torch",
            "profile_token_end must be >",
        ),
        ({"tool_config": {"torch": {"contnets": []}}}, "tool_config.torch", "did you mean 'contents'"),
    ],
)
def test_errors_name_field_value_and_rule(changes: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_verl(role(**changes), at=None)
    assert info.value.path == path
    assert fragment in str(info.value)


def test_global_profiler_block() -> None:
    result = load_verl({"tool": "torch", "steps": [2, 4], "save_path": "prof", "global_tool_config": {}})
    assert (result.enabled, result.steps) == (True, (2, 4))
    assert result.profiles_step(4)
    assert not result.profiles_step(3)
    for steps in (None, []):
        off = load_verl({"tool": "torch", "steps": steps, "save_path": "prof"})
        assert (off.enabled, off.reason) == (False, "global_profiler.steps is null or empty: verl profiles no trainer step")
    with pytest.raises(ConfigError) as info:
        load_verl({"tool": "torch", "steps": [1, "2"]})
    assert info.value.path == "steps[1]"


def test_ranks_as_verl_selects_them() -> None:
    everyone = load_verl(role(all_ranks=True))
    listed = load_verl(role(ranks=[0, 5, 6]))
    default = load_verl(role())
    assert all(everyone.profiles_rank(r) for r in range(8))
    assert [r for r in range(8) if listed.profiles_rank(r)] == [0, 5, 6]
    assert [r for r in range(8) if default.profiles_rank(r)] == [0]
    # Rollout: global GPU ranks -> the replicas owning them (rank // replica_world_size).
    assert [r for r in range(4) if listed.profiles_replica(r, 2)] == [0, 2, 3]
    assert [r for r in range(4) if listed.profiles_replica(r, 4)] == [0, 1]
    assert [r for r in range(4) if default.profiles_replica(r, 2)] == [0]
    assert all(everyone.profiles_replica(r, 2) for r in range(4))


def test_omegaconf_nodes_at_any_depth() -> None:
    omegaconf = pytest.importorskip("omegaconf", reason="omegaconf is in the test dependency group")
    node = omegaconf.OmegaConf.create({"torch": {"contents": ["cuda"], "discrete": True}})
    result = load_verl(role(tool_config=node))  # a plain dict holding a DictConfig holding a ListConfig
    assert result.spec is not None
    assert result.spec.activities == ("cpu", "cuda")
    assert load_verl(omegaconf.OmegaConf.create(role())).to_dict() == load_verl(role()).to_dict()


def test_whole_trainer_file_with_interpolations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("omegaconf", reason="omegaconf is in the test dependency group")
    pytest.importorskip("yaml", reason="pyyaml is in the test dependency group")
    file = tmp_path / "trainer.yaml"
    file.write_text(TRAINER_YAML.format(tool="torch", steps="[3]"))
    workdir = tmp_path / "run"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    rollout = load_verl(file, at="actor_rollout_ref.rollout.profiler")
    assert (rollout.enabled, rollout.tool, rollout.ranks, rollout.steps, rollout.discrete) == (True, "torch", (0, 5), (3,), True)
    spec = load_spec(file, at="actor_rollout_ref.rollout.profiler")
    assert (spec.window, spec.activities, spec.records()) == (Window(20, 80, unit="tokens"), ("cpu",), ("stack",))
    assert spec.output_dir == workdir / "prof"  # verl's save_path: the working directory, not the file's folder
    file.write_text(TRAINER_YAML.format(tool="null", steps="[3]"))
    assert load_verl(file, at="actor_rollout_ref.rollout.profiler").reason == "tool is null"
    file.write_text(TRAINER_YAML.format(tool="torch", steps="null"))
    assert not load_verl(file, at="actor_rollout_ref.rollout.profiler").enabled
    with pytest.raises(ConfigError, match="choose a block with at="):
        load_spec(file)
    with pytest.raises(ConfigError, match=r"no key 'rollut' under actor_rollout_ref \(did you mean 'rollout'\?\)"):
        load_verl(file, at="actor_rollout_ref.rollut.profiler")


def test_interpolations_without_omegaconf_name_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("yaml", reason="pyyaml is in the test dependency group")
    file = tmp_path / "trainer.yaml"
    file.write_text(TRAINER_YAML.format(tool="torch", steps="[3]"))
    monkeypatch.setitem(sys.modules, "omegaconf", None)  # as if omegaconf (profwin-verl's dependency) were not installed
    with pytest.raises(ConfigError, match=r"pip install omegaconf") as info:
        load_verl(file, at="actor_rollout_ref.rollout.profiler")
    assert info.value.path == "actor_rollout_ref.rollout.profiler.tool"
    # A block without interpolations needs no OmegaConf.
    assert load_verl(file, at="actor_rollout_ref.actor.profiler.tool_config.torch").spec is not None


def test_unresolvable_interpolation_is_a_config_error(tmp_path: Path) -> None:
    pytest.importorskip("omegaconf", reason="omegaconf is in the test dependency group")
    with pytest.raises(ConfigError, match="OmegaConf cannot read it") as info:
        load_verl({"block": role(save_path="${nowhere.save_path}")}, at="block")
    assert info.value.path.startswith("block")


def test_cli_validate_at(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("omegaconf", reason="omegaconf is in the test dependency group")
    pytest.importorskip("yaml", reason="pyyaml is in the test dependency group")
    monkeypatch.chdir(tmp_path)
    file = tmp_path / "trainer.yaml"
    file.write_text(TRAINER_YAML.format(tool="torch", steps="[3]"))
    assert main(["validate", str(file), "--at", "actor_rollout_ref.rollout.profiler", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["enabled"], summary["window"], summary["ranks"]) == (True, "20:80 tokens", [0, 5])
    file.write_text(TRAINER_YAML.format(tool="null", steps="[3]"))
    assert main(["validate", str(file), "--at", "actor_rollout_ref.rollout.profiler", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["valid"], summary["enabled"], summary["reason"]) == (
        True,
        False,
        "verl profiles nothing with this config: tool is null",
    )
    assert main(["validate", str(file), "--at", "actor_rollout_ref.rollout.nothing"]) == 1
    assert "no key 'nothing'" in capsys.readouterr().err


def test_a_disabled_block_needs_no_tool_block() -> None:
    assert load_verl(role(enable=False, tool_config={})).reason == "enable is false"
    with pytest.raises(ConfigError, match="has no block for tool 'torch'") as info:
        load_verl(role(tool_config={"npu": {}}))
    assert info.value.path == "tool_config"


@pytest.mark.parametrize(
    ("document", "path", "message"),
    [
        (role(tool_config={"nsys": {}, 1: {}}), "tool_config", "has no block for tool 'torch' (found [1, 'nsys'])"),
        (
            {"_target_": "verl.workers.config.FSDPActorConfig", 1: "x", "strategy": "fsdp"},
            "",
            "is verl's FSDPActorConfig, which holds no profiler block (keys: [1, '_target_', 'strategy'])",
        ),
    ],
)
def test_keys_of_mixed_types_are_listed_not_compared(document: dict[Any, Any], path: str, message: str) -> None:
    """A YAML key such as ``1:`` beside string keys: listing the keys for the message sorted an int
    against a str, and ``profwin validate`` said "internal error, please report it"."""
    with pytest.raises(ConfigError) as info:
        load_verl(document)
    assert info.value.path == path
    assert info.value.reason.startswith(message)


def test_every_bad_field_is_reported_at_once() -> None:
    bad = role(
        ranks=[-1], save_path=3, tool_config={"torch": {"contents": ["gpu"], "profile_token_start": 5, "profile_token_end": 5}}
    )
    with pytest.raises(ConfigError) as info:
        load_verl(bad)
    assert sorted(e.path for e in info.value.errors) == [
        "ranks[0]",
        "save_path",
        "tool_config.torch",
        "tool_config.torch.contents[0]",
    ]


# A file with only what its user changes, as verl's docs write one ("rollout & ref follow actor
# settings"): verl merges it onto its trainer config, whose role blocks default what the file leaves
# out to global_profiler's and (the rollout's) to the actor's. integration_tests/verl holds these
# readings against verl 0.9.1's own merge of its _generated_ppo_trainer.yaml.
USER_FILE = {
    "global_profiler": {"tool": "torch", "steps": [4], "save_path": "traces", "relocate_results": True},
    "actor_rollout_ref": {
        "actor": {
            "profiler": {"enable": True, "all_ranks": True, "tool_config": {"torch": {"discrete": True, "contents": ["stack"]}}}
        },
        "rollout": {"profiler": {"tool_config": {"torch": {"profile_token_start": 5, "profile_token_end": 9}}}},
        "ref": {"profiler": {"enable": True}},
    },
}
ROLLOUT = "actor_rollout_ref.rollout.profiler"


def test_a_role_block_takes_what_it_leaves_out_as_verl_fills_it_in() -> None:
    rollout = load_verl(USER_FILE, at=ROLLOUT)
    # enable, ranks, discrete and contents follow the actor's; tool, save_path from global_profiler.
    assert (rollout.enabled, rollout.tool, rollout.all_ranks, rollout.discrete) == (True, "torch", True, True)
    assert (rollout.save_path, rollout.relocate_results, rollout.steps) == ("traces", True, (4,))
    assert rollout.spec is not None
    assert (str(rollout.spec.window), rollout.spec.activities, rollout.spec.stack) == ("5:9 tokens", ("cpu",), True)
    ref = load_verl(USER_FILE, at="actor_rollout_ref.ref.profiler")  # no tool_config: a role block by its place
    assert (ref.enabled, ref.tool, ref.all_ranks, ref.discrete, ref.save_path) == (True, "torch", False, False, "traces")
    # What a block sets stays its own.
    own = {
        **USER_FILE,
        "actor_rollout_ref": {**USER_FILE["actor_rollout_ref"], "rollout": {"profiler": {"enable": False, "save_path": "r"}}},
    }
    mine = load_verl(own, at=ROLLOUT)
    assert (mine.enabled, mine.save_path, mine.reason) == (False, "r", "enable is false")


def test_what_a_block_leaves_out_is_named_when_verl_would_profile_nothing(tmp_path: Path) -> None:
    no_tool = {"global_profiler": {"steps": [1]}, "actor_rollout_ref": USER_FILE["actor_rollout_ref"]}
    assert load_verl(no_tool, at=ROLLOUT).reason == (
        "tool is null: the block sets no tool, and verl takes global_profiler.tool, which this document does not set either"
    )
    assert load_verl(no_tool, at="global_profiler").reason == "tool is null: the block sets no tool, and verl's default is null"
    actor_off = {"global_profiler": {"tool": "torch", "steps": [1]}, "actor_rollout_ref": {"rollout": {"profiler": {}}}}
    assert load_verl(actor_off, at=ROLLOUT).reason == (
        "enable is false: the block sets no enable, and verl takes actor_rollout_ref.actor.profiler.enable, "
        "which this document does not set either"
    )
    with pytest.raises(ProfilingDisabled, match=r"verl takes global_profiler\.tool"):
        load_spec(no_tool, at=ROLLOUT)


def test_a_training_roles_npu_block_takes_verls_defaults() -> None:
    document = {
        "global_profiler": {"tool": "npu", "steps": [1]},
        "actor_rollout_ref": {"actor": {"profiler": {"enable": True, "tool_config": {"npu": {"contents": ["npu"]}}}}},
    }
    spec = load_verl(document, at="actor_rollout_ref.actor.profiler").spec
    assert spec is not None
    assert dict(spec.options["npu"]) == {"level": "level0", "analysis": True}  # verl's actor.yaml


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"_target_": "verl.workers.config.RolloutConfig", "name": "vllm", "temperature": 1.0, "profiler": role()},
            "is verl's RolloutConfig, not a profiler block: choose a block with at=, e.g. 'profiler'",
        ),
        (
            {"_target_": "verl.workers.config.FSDPActorConfig", "strategy": "fsdp", "grad_clip": 1.0},
            "is verl's FSDPActorConfig, which holds no profiler block (keys: ['_target_', 'grad_clip', 'strategy'])",
        ),
    ],
)
def test_verls_other_configs_are_told_apart_from_profiler_blocks(
    document: dict[str, Any], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # verl's role configs name a verl class in _target_ too; they were read as tool blocks (one
    # "unknown key" error per setting: 56 for verl's rollout.yaml).
    with pytest.raises(ConfigError) as info:
        load_verl(document)
    assert info.value.reason.startswith(message)
    file = tmp_path / "config.json"
    file.write_text(json.dumps(document))
    assert main(["validate", str(file)]) == 1
    err = capsys.readouterr().err
    assert message.replace("with at=", "with --at") in err
    assert "unknown key" not in err
    if "profiler" in document:
        assert load_verl(document, at="profiler").enabled


@pytest.mark.parametrize(
    ("change", "at", "path"),
    [
        ({"actor": {"profiler": {"enable": True, "ranks": "0,1"}}}, ROLLOUT, "actor_rollout_ref.actor.profiler.ranks"),
        ({"actor": {"profiler": {"enable": "yes"}}}, ROLLOUT, "actor_rollout_ref.actor.profiler.enable"),
        (
            {"actor": {"profiler": {"enable": True, "tool_config": {"torch": {"contents": ["gpu"]}}}}},
            ROLLOUT,
            "actor_rollout_ref.actor.profiler.tool_config.torch.contents[0]",
        ),
        (
            {"actor": {"profiler": {"enable": True, "tool_config": "torch"}}},
            ROLLOUT,
            "actor_rollout_ref.actor.profiler.tool_config",
        ),
        ({"actor": {"profiler": [True]}}, ROLLOUT, "actor_rollout_ref.actor.profiler"),
        ({"global_profiler": {"tool": "torch", "steps": [1], "save_path": 3}}, ROLLOUT, "global_profiler.save_path"),
        ({"global_profiler": {"tool": "tensorboard", "steps": [1]}}, "actor_rollout_ref.ref.profiler", "global_profiler.tool"),
        (
            {
                "global_profiler": {
                    "tool": "torch_memory",
                    "steps": [1],
                    "global_tool_config": {"torch_memory": {"stack_depth": 0}},
                }
            },
            "actor_rollout_ref.actor.profiler",
            "global_profiler.global_tool_config.torch_memory.stack_depth",
        ),
    ],
)
def test_a_bad_value_a_block_takes_from_another_is_named_where_it_is_written(change: dict[str, Any], at: str, path: str) -> None:
    document: dict[str, Any] = {
        "global_profiler": {"tool": "torch", "steps": [1]},
        "actor_rollout_ref": {
            "actor": {"profiler": {"enable": True}},
            "rollout": {"profiler": {}},
            "ref": {"profiler": {"enable": True}},
        },
    }
    document["global_profiler"] = change.get("global_profiler", document["global_profiler"])
    document["actor_rollout_ref"].update({k: v for k, v in change.items() if k != "global_profiler"})
    with pytest.raises(ConfigError) as info:
        load_verl(document, at=at)
    assert [e.path for e in info.value.errors or [info.value]] == [path]
    # A value the block sets itself is its own: the bad one it would have taken is not looked at.
    if at == ROLLOUT and path.endswith(("ranks", "enable", "contents[0]")):
        own = {"enable": True, "ranks": [0], "tool_config": {"torch": {"contents": ["cpu"], "discrete": True}}}
        document["actor_rollout_ref"]["rollout"] = {"profiler": own}
        assert load_verl(document, at=at).enabled


def test_the_rollout_block_profiles_only_what_verls_rollout_servers_start() -> None:
    """verl 0.9.1's vLLM and SGLang rollout servers start the engine's profiler in discrete mode
    only, and for torch or npu only (integration_tests/verl checks this against verl's own
    decision); its TensorRT-LLM server checks no discrete mode."""
    document: dict[str, Any] = {
        "global_profiler": {"tool": "torch", "steps": [1]},
        "actor_rollout_ref": {"rollout": {"profiler": {"enable": True, "tool_config": {"torch": {"profile_token_start": 2}}}}},
    }
    rollout = load_verl(document, at=ROLLOUT)
    assert (rollout.enabled, rollout.reason) == (
        False,
        "discrete is false: verl's vLLM and SGLang rollout servers start the engine profiler only in discrete mode",
    )
    document["actor_rollout_ref"]["rollout"]["profiler"]["tool_config"]["torch"]["discrete"] = True
    assert load_verl(document, at=ROLLOUT).enabled
    document["global_profiler"]["tool"] = "torch_memory"
    assert load_verl(document, at=ROLLOUT).reason == (
        "tool is torch_memory: verl's vLLM and SGLang rollout servers start the engine profiler only with torch or npu"
    )
    document["actor_rollout_ref"]["rollout"]["name"] = "trtllm"
    document["global_profiler"]["tool"] = "torch"
    document["actor_rollout_ref"]["rollout"]["profiler"]["tool_config"]["torch"]["discrete"] = False
    assert load_verl(document, at=ROLLOUT).enabled
    document["actor_rollout_ref"]["rollout"].pop("name")
    document["global_profiler"]["tool"] = "torch_memory"
    # A training role's block with the same settings profiles: the rule is the rollout servers'.
    document["actor_rollout_ref"]["actor"] = document["actor_rollout_ref"].pop("rollout")
    assert load_verl(document, at="actor_rollout_ref.actor.profiler").enabled
