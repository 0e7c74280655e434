"""verl's blocks through profwin-verl's spec format: spec_from_verl, and profwin.load_spec finding
verl's reader through its ``profwin.spec_formats`` entry point (moved from profwin-core's tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from profwin import ConfigError, Window, load_spec
from profwin_verl import spec_from_verl

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
    assert spec.window == Window(20, 80, unit="tokens")
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
    assert spec_from_verl({"contents": ["cuda"], "profile_token_end": 8}).window == Window(0, 8, unit="tokens")
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
    assert (spec.window, spec.ranks) == (Window(3, 9, unit="tokens"), (1,))


def test_the_entry_point_names_the_reader() -> None:
    import importlib.metadata

    (ep,) = importlib.metadata.entry_points(group="profwin.spec_formats", name="verl")
    assert ep.value == "profwin_verl.settings:spec_format"
    assert ep.dist is not None
    assert ep.dist.name == "profwin-verl"


def test_omegaconf_dictconfig() -> None:
    omegaconf = pytest.importorskip("omegaconf", reason="omegaconf is profwin-verl's dependency")
    verl = omegaconf.OmegaConf.create(VERL_ROLE)
    assert spec_from_verl(verl).window == Window(20, 80, unit="tokens")
