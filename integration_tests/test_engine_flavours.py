"""The vllm and sglang backends consult profwin-npu's engine flavours through core's entry
points (never by importing it): options an Ascend build of the engine ignores are warned about,
and a window vllm-ascend cannot honour is an error. Runs on CPU: nothing here starts an engine."""

from __future__ import annotations

import sys
import warnings

import pytest

from profwin import ConfigError, ProfileSpec, Window

pytest.importorskip("profwin_npu", reason="needs profwin-npu installed (the workspace installs it)")
from profwin.runtime.versions import EngineVersion
from profwin_npu import NpuOptionIgnored
from profwin_sglang import activities_for
from profwin_vllm import plan_for


def test_vllm_on_ascend_warns_for_ignored_options() -> None:
    spec = ProfileSpec(window=Window(2, 5), shapes=True, options={"vllm": {"platform": "ascend"}})
    with pytest.warns(NpuOptionIgnored, match=r"vllm-ascend 0\.31\.0 ignores shapes=true"):
        plan = plan_for(spec, EngineVersion.parse("0.31.0"))
    assert plan.launch["profiler_config"]["delay_iterations"] == 3  # the window itself is still mapped with vLLM's rule


def test_vllm_ascend_without_window_support_is_an_error() -> None:
    spec = ProfileSpec(window=Window(2, 5), options={"vllm": {"platform": "ascend"}})
    with pytest.raises(ConfigError, match=r"window: vllm-ascend 0\.13\.0 ignores the window 2:5"), pytest.warns(NpuOptionIgnored):
        plan_for(spec, EngineVersion.parse("0.13.0"))
    plan_for(ProfileSpec(window=Window(), options={"vllm": {"platform": "ascend"}}), EngineVersion.parse("0.13.0"))


def test_sglang_on_npu_warns_for_ignored_npu_options() -> None:
    spec = ProfileSpec(window=Window(0, 4), options={"npu": {"level": "level2"}})
    with pytest.warns(NpuOptionIgnored, match="sglang .*ignores options.npu.level='level2'"):
        activities, dropped = activities_for(spec, "npu")
    assert (activities, dropped) == (["CPU", "GPU"], [])


def test_the_warning_points_at_the_line_that_asked_for_the_plan() -> None:
    # Between that line and the warning lie vLLM's plan, core's discovery and profwin-npu's
    # flavour (it pointed at profwin/discovery.py); a version of its own, as each warns once.
    spec = ProfileSpec(window=Window(2, 5), shapes=True, options={"vllm": {"platform": "ascend"}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        here = sys._getframe().f_lineno + 1
        plan_for(spec, EngineVersion.parse("0.31.9"))
    assert {(w.filename, w.lineno) for w in caught if issubclass(w.category, NpuOptionIgnored)} == {(__file__, here)}
