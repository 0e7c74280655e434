"""ProfileSpec validation and the loaders: dict, YAML/JSON text and files, verl blocks, OmegaConf."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profwin import ConfigError, ProfileSpec, Window, load_spec, spec_from_mapping, spec_from_yaml
from profwin.verl import spec_from_verl


def test_defaults() -> None:
    spec = ProfileSpec()
    assert spec.window == Window()
    assert spec.activities is None
    assert spec.records() == ()
    assert spec.output_dir == Path("profwin-traces").absolute()
    assert spec.prefix == "profwin"
    assert spec.ranks == (0,)
    assert spec.profiles_rank(0)
    assert not spec.profiles_rank(1)


@pytest.mark.parametrize(
    ("kwargs", "path", "fragment"),
    [
        ({"activities": ["gpu"]}, "activities[0]", "'gpu'"),
        ({"activities": "cpu"}, "activities", "must be a list"),
        ({"activities": []}, "activities", "must not be empty"),
        ({"shapes": 1}, "shapes", "true or false"),
        ({"prefix": "-bad"}, "prefix", "starting with a letter or digit"),
        ({"prefix": "a" * 129}, "prefix", "1-128"),
        ({"prefix": "has space"}, "prefix", "[A-Za-z0-9._-]"),
        ({"ranks": [0, -1]}, "ranks[1]", "non-negative"),
        ({"ranks": True}, "ranks", "'all', a rank"),
        ({"ranks": []}, "ranks", "non-empty"),
        ({"ranks": "some"}, "ranks", "'all'"),
        ({"output_dir": ""}, "output_dir", "non-empty path"),
        ({"options": {"npu": 3}}, "options.npu", "mapping"),
        ({"on_unavailable": "ignore"}, "on_unavailable", "'error' or 'drop'"),
        ({"window": "20:80"}, "window", "Window.parse"),
    ],
)
def test_spec_field_errors_name_field_value_and_rule(kwargs: dict[str, object], path: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        ProfileSpec(**kwargs)  # type: ignore[arg-type]
    assert info.value.path == path
    assert fragment in str(info.value)


def test_ranks_forms() -> None:
    assert ProfileSpec(ranks="all").profiles_rank(7)
    assert ProfileSpec(ranks=3).ranks == (3,)  # type: ignore[arg-type]
    assert ProfileSpec(ranks=[1, 2]).profiles_rank(2)  # type: ignore[arg-type]


def test_activities_are_normalised_and_deduplicated() -> None:
    assert ProfileSpec(activities=["cuda", "cpu", "cuda"]).activities == ("cpu", "cuda")


def test_output_dir_is_absolute_created_and_checked(tmp_path: Path) -> None:
    spec = ProfileSpec(output_dir=tmp_path / "a" / "b")
    assert spec.prepare_output_dir() == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="output_dir: must be a writable directory"):
        ProfileSpec(output_dir=blocker / "sub").prepare_output_dir()


def test_spec_is_frozen_and_replace_validates() -> None:
    spec = ProfileSpec()
    with pytest.raises(AttributeError):
        spec.prefix = "x"  # type: ignore[misc]
    assert spec.replace(prefix="run1").prefix == "run1"
    with pytest.raises(ConfigError, match="prefix"):
        spec.replace(prefix="")


def test_mapping_form(tmp_path: Path) -> None:
    spec = spec_from_mapping(
        {
            "window": "20:80",
            "activities": ["cpu"],
            "record": ["shapes", "stack"],
            "output_dir": "traces",
            "prefix": "run1",
            "ranks": "all",
            "options": {"torch": {"format": "json"}},
        },
        base_dir=tmp_path,
    )
    assert spec.window == Window(20, 80)
    assert spec.records() == ("shapes", "stack")
    assert spec.output_dir == tmp_path / "traces"
    assert spec.plugin_options("torch") == {"format": "json"}
    assert spec_from_mapping({"window": {"start": 3}}).window == Window(3)
    assert spec_from_mapping({"profile_token_start": 20, "profile_token_end": 80}).window == Window(20, 80)


def test_mapping_form_reports_every_error_with_its_path() -> None:
    with pytest.raises(ConfigError) as info:
        spec_from_mapping({"window": "9:3", "record": ["shapes", "stak"], "prefix": "", "colour": 1, "ranks": [-2]})
    paths = sorted(e.path for e in info.value.errors)
    assert paths == ["", "prefix", "ranks[0]", "record[1]", "window"]
    text = str(info.value)
    assert "unknown key 'colour'" in text
    assert "window end must be > window start" in text


def test_window_given_twice_is_an_error() -> None:
    with pytest.raises(ConfigError, match="give the window once"):
        spec_from_mapping({"window": "1:2", "profile_token_start": 1})


def test_yaml_and_json_text() -> None:
    spec = spec_from_yaml("window: '20:80'\nrecord: [memory]\nranks: [0, 1]\n")
    assert (spec.window, spec.memory, spec.ranks) == (Window(20, 80), True, (0, 1))
    assert spec_from_yaml('{"window": "5:"}').window == Window(5)
    with pytest.raises(ConfigError, match="not valid YAML"):
        spec_from_yaml("window: [1, 2\n")


def test_load_spec_from_files(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("window: '2:4'\noutput_dir: out\n")
    spec = load_spec(tmp_path / "s.yaml")
    assert spec.window == Window(2, 4)
    assert spec.output_dir == tmp_path / "out"  # relative to the file, not the working directory
    (tmp_path / "s.json").write_text(json.dumps({"window": {"start": 1, "end": 9}}))
    assert load_spec(str(tmp_path / "s.json")).window == Window(1, 9)
    with pytest.raises(ConfigError, match="cannot read spec file"):
        load_spec(tmp_path / "missing.yaml")


VERL_ROLE = {
    "tool": "torch",
    "enable": True,
    "all_ranks": False,
    "ranks": [0, 2],
    "save_path": "outputs/profile",
    "tool_config": {
        "torch": {"contents": ["cpu", "shapes", "stack"], "profile_token_start": 20, "profile_token_end": 80, "discrete": True},
        "npu": {"contents": ["npu", "module"], "level": "level1", "analysis": True, "discrete": False},
    },
}


def test_verl_role_block(tmp_path: Path) -> None:
    spec = spec_from_verl(VERL_ROLE, base_dir=tmp_path)
    assert spec.window == Window(20, 80)
    assert spec.activities == ("cpu",)
    assert spec.records() == ("shapes", "stack")
    assert spec.ranks == (0, 2)
    assert spec.output_dir == tmp_path / "outputs" / "profile"
    npu = spec_from_verl(VERL_ROLE, tool="npu")
    assert npu.activities == ("cpu", "npu")  # verl's NPU profiler always records CPU too
    assert npu.modules
    assert npu.window == Window()
    assert dict(npu.plugin_options("npu")) == {"level": "level1", "analysis": True}
    assert spec_from_verl({**VERL_ROLE, "all_ranks": True}).ranks == "all"


def test_verl_tool_block_and_errors_carry_paths() -> None:
    assert spec_from_verl({"contents": ["cuda"], "profile_token_end": 8}).window == Window(0, 8)
    bad = {"tool_config": {"torch": {"contents": ["cpu", "memory", "gpu"]}}}
    with pytest.raises(ConfigError) as info:
        spec_from_verl(bad, path="profiler")
    assert info.value.path == "profiler.tool_config.torch.contents[2]"
    with pytest.raises(ConfigError) as info:
        spec_from_verl({"tool_config": {"torch": {"profile_token_start": 80, "profile_token_end": 20}}}, path="profiler")
    assert str(info.value) == (
        "profiler.tool_config.torch: profile_token_end must be > profile_token_start "
        "(got profile_token_start=80, profile_token_end=20)"
    )
    with pytest.raises(ConfigError, match="did you mean 'contents'"):
        spec_from_verl({"contnets": ["cpu"], "discrete": True})
    with pytest.raises(ConfigError, match="has no block for tool 'npu'"):
        spec_from_verl({"tool": "npu", "tool_config": {"torch": {}}})


def test_load_spec_recognises_verl_documents(tmp_path: Path) -> None:
    (tmp_path / "verl.yaml").write_text(
        "profiler:\n  tool: torch\n  ranks: [1]\n  tool_config:\n    torch:\n      contents: [cpu]\n"
        "      profile_token_start: 3\n      profile_token_end: 9\n"
    )
    spec = load_spec(tmp_path / "verl.yaml")
    assert (spec.window, spec.ranks) == (Window(3, 9), (1,))


def test_omegaconf_dictconfig() -> None:
    omegaconf = pytest.importorskip("omegaconf", reason="omegaconf is in the test dependency group")
    cfg = omegaconf.OmegaConf.create({"window": {"start": 2, "end": 6}, "record": ["flops"]})
    spec = load_spec(cfg)
    assert (spec.window, spec.flops) == (Window(2, 6), True)
    verl = omegaconf.OmegaConf.create(VERL_ROLE)
    assert spec_from_verl(verl).window == Window(20, 80)
