"""Engine flavours: what vllm-ascend and SGLang-on-NPU do with a spec, and the warnings about it."""

from __future__ import annotations

import importlib.metadata
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from profwin import ConfigError, ProfileSpec, Window
from profwin_npu import NpuOptionIgnored, engine_flavour, engine_notes, engines


@pytest.fixture(autouse=True)
def fresh_warning_memory() -> Iterator[None]:
    """Each test starts with nothing warned yet (the module remembers across calls on purpose)."""
    engines._warned.clear()
    yield
    engines._warned.clear()


def spec(window: str = "20:80", **kw: Any) -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), **kw)


def quiet(engine: str, version: str | None, s: ProfileSpec) -> dict[str, Any]:
    return engine_flavour(engine, version, s, warn=False)


# -- vllm-ascend ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "honours"),
    [("0.20.2rc1", True), ("0.20.2", True), ("0.23.0.post1", True), ("v0.21.0rc2", True), ("0.20.2rc0", False),
     ("0.20.1", False), ("0.14.0rc1", False), ("0.20.2.dev5", False), (None, True)],
)  # fmt: skip
def test_vllm_ascend_honours_the_window_since_0_20_2rc1(version: str | None, honours: bool) -> None:
    flavour = quiet("vllm-ascend", version, spec())
    assert flavour["honours_window"] is honours
    assert ("window" in flavour["ignored"]) is not honours


def test_old_vllm_ascend_with_a_whole_session_window_ignores_nothing() -> None:
    assert quiet("vllm-ascend", "0.14.0", spec(":"))["ignored"] == {}


def test_vllm_ascend_fixed_settings_and_what_it_ignores() -> None:
    s = spec(shapes=True, flops=True, stack=True, options={"npu": {"level": "level2", "analysis": True}})
    flavour = quiet("vllm-ascend", "0.23.0", s)
    assert flavour["engine"] == "vllm-ascend"
    assert flavour["activities"] is None  # always CPU+NPU: send no activities
    assert flavour["with_stack"] is True
    assert flavour["fixed"]["level"] == "level1"
    assert set(flavour["ignored"]) == {"shapes", "flops", "stack", "options.npu.level", "options.npu.analysis"}
    assert "vllm-ascend 0.23.0 ignores options.npu.level='level2' (fixed at 'level1')" in flavour["notes"]
    assert flavour["notes"] == list(flavour["ignored"].values())


def test_options_equal_to_the_engines_choice_are_not_reported() -> None:
    s = spec(options={"npu": {"level": "level1", "analysis": False, "export_type": "text"}})
    assert quiet("vllm-ascend", "0.23.0", s)["ignored"] == {}


def test_modules_reach_vllm_ascend_through_with_stack() -> None:
    flavour = quiet("vllm-ascend", "0.23.0", spec(modules=True))
    assert flavour["with_stack"] is True
    assert flavour["ignored"] == {}
    assert quiet("vllm-ascend", "0.23.0", spec())["with_stack"] is False


def test_vllm_ascend_activities() -> None:
    assert quiet("vllm-ascend", "0.23.0", spec(activities=["cpu", "npu"]))["ignored"] == {}
    assert "activities" in quiet("vllm-ascend", "0.23.0", spec(activities=["cpu"]))["ignored"]


def test_vllm_is_read_as_vllm_ascend() -> None:
    assert quiet("vllm", "0.23.0", spec())["engine"] == "vllm-ascend"


# -- SGLang on NPU -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("activities", "sent"),
    [(None, ["CPU", "GPU"]), (["npu"], ["GPU"]), (["cpu"], ["CPU"]), (["npu", "cpu"], ["CPU", "GPU"])],
)
def test_sglang_gpu_means_the_npu(activities: list[str] | None, sent: list[str]) -> None:
    assert quiet("sglang", "0.5.23", spec(activities=activities))["activities"] == sent


@pytest.mark.parametrize("activity", ["cuda", "xpu"])
def test_sglang_on_npu_rejects_other_accelerators(activity: str) -> None:
    with pytest.raises(ConfigError, match="SGLang on NPU records only") as err:
        quiet("sglang", "0.5.23", spec(activities=["cpu", activity]))
    assert err.value.path == "activities[1]"


def test_sglang_ignores_mem_and_its_fixed_options() -> None:
    s = spec(memory=True, shapes=True, options={"npu": {"data_simplification": True, "level": "level1"}})
    flavour = quiet("sglang", "0.5.23", s)
    assert set(flavour["ignored"]) == {"memory", "options.npu.data_simplification"}
    assert flavour["with_stack"] is None
    assert flavour["fixed"]["analysis"] is True


# -- warnings ------------------------------------------------------------------------------------


def test_warns_once_per_option_and_engine_version() -> None:
    s = spec(shapes=True, options={"npu": {"level": "level0"}})
    with pytest.warns(NpuOptionIgnored) as first:
        engine_flavour("vllm-ascend", "0.23.0", s)
    messages = sorted(str(w.message) for w in first)
    assert messages == [
        "profwin: vllm-ascend 0.23.0 ignores options.npu.level='level0' (fixed at 'level1')",
        "profwin: vllm-ascend 0.23.0 ignores shapes=true (record_shapes is not forwarded)",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine_flavour("vllm-ascend", "0.23.0", s)  # the same again: silent
    with pytest.warns(NpuOptionIgnored) as other_version:
        engine_flavour("vllm-ascend", "0.22.0", s)
    assert len(other_version) == 2


def test_engine_notes_are_the_warned_sentences() -> None:
    with pytest.warns(NpuOptionIgnored):
        notes = engine_notes("sglang", "0.5.23", spec(memory=True))
    assert notes == ["sglang 0.5.23 ignores memory=true (the MEM activity does nothing on NPU)"]


def test_unknown_version_is_said_so() -> None:
    notes = quiet("sglang", None, spec(memory=True))["notes"]
    assert notes == ["sglang (version not given) ignores memory=true (the MEM activity does nothing on NPU)"]


# -- errors and discovery ------------------------------------------------------------------------


def test_unknown_engine() -> None:
    with pytest.raises(ConfigError, match=r"must be one of \['vllm-ascend', 'sglang'\] \(got 'trtllm'\)") as err:
        quiet("trtllm", "1.0", spec())
    assert err.value.path == "engine"


@pytest.mark.parametrize("version", ["latest", "0.x", ""])
def test_unreadable_version(version: str) -> None:
    with pytest.raises(ConfigError, match="must be a version like") as err:
        quiet("vllm-ascend", version or " ", spec())
    assert err.value.path == "engine_version"


def test_bad_npu_options_are_reported_here_too() -> None:
    with pytest.raises(ConfigError) as err:
        quiet("sglang", "0.5.23", spec(options={"npu": {"export_type": "csv"}}))
    assert err.value.path == "options.npu.export_type"


def test_backends_reach_it_through_the_entry_point() -> None:
    (ep,) = importlib.metadata.entry_points(group="profwin.engine_flavours", name="npu")
    flavour = ep.load()("sglang", "0.5.23", spec(), warn=False)
    assert flavour["activities"] == ["CPU", "GPU"]


def test_release_candidates_come_before_the_release() -> None:
    # core's EngineVersion (PEP 440): vllm-ascend took the window in 0.20.2rc1, not before.
    assert quiet("vllm-ascend", "0.20.2rc1", spec())["honours_window"] is True
    assert quiet("vllm-ascend", "0.20.2rc0", spec())["honours_window"] is False
    assert quiet("vllm-ascend", "0.20.1", spec())["honours_window"] is False
