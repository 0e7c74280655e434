"""The session timeline in vLLM plans: profwin's flag on ``delay_iterations`` only where every
worker reported the engine plugin records timelines; a note where not; state files keep it."""

from __future__ import annotations

import pytest

from profwin.plugin import ProfileSpec, Window
from profwin.plugin.engines import EngineVersion, decode_timeline
from profwin_vllm.plan import check_state, fixed_at_launch, plan_for
from profwin_vllm.targets import timeline_answer

V32, V27 = EngineVersion.parse("0.32.0"), EngineVersion.parse("0.27.0")


@pytest.mark.parametrize("window", ["4:12", "4:12 tokens", ":"])
def test_the_flag_rides_on_the_windows_own_numbers(window: str) -> None:
    spec = ProfileSpec(window=Window.parse(window), timeline=True)
    plain = plan_for(spec.replace(timeline=False), V32)
    flagged = plan_for(spec, V32, timeline_plugin=True)
    assert flagged.details["timeline"] is True
    assert decode_timeline(flagged.request["delay_iterations"]) == (plain.request["delay_iterations"], True)
    assert flagged.request["max_iterations"] == plain.request["max_iterations"]
    assert flagged.notes == plain.notes
    check_state(flagged, spec)  # a state file keeps it, checked like every number


def test_workers_that_do_not_say_get_no_flag_and_a_note() -> None:
    spec = ProfileSpec(window=Window(4, 12), timeline=True)
    plan = plan_for(spec, V32, timeline_plugin=False, inactive="worker rank(s) 1 of 2 do not run profwin-vllm's engine plugin")
    assert plan.details["timeline"] is False
    assert plan.request["delay_iterations"] == 5  # vLLM's own step window, as without the option
    assert any(n.startswith("no session timeline is recorded: worker rank(s) 1 of 2") for n in plan.notes)
    assert not timeline_answer([{"timeline": 1}, {"timeline": None}])
    assert timeline_answer([{"timeline": 1}, {"timeline": 1}])
    cuda = plan_for(spec.replace(options={"vllm": {"profiler": "cuda"}}), V32, timeline_plugin=True)
    assert cuda.details["timeline"] is False
    assert any("'cuda' profiler writes no file" in n for n in cuda.notes)


def test_an_engine_launched_without_the_flag_records_the_window_without_a_timeline() -> None:
    spec = ProfileSpec(window=Window(4, 12), timeline=True)
    plan = plan_for(spec, V27, timeline_plugin=True)  # vLLM 0.27: the window (and the flag) at launch
    assert plan.launch["profiler_config"]["delay_iterations"] == plan.details["delay_iterations"]
    launched = fixed_at_launch(plan, 5, 8)  # launched for window 4:12 without the flag
    assert launched.details["timeline"] is False
    assert launched.details["delay_iterations"] == 5
    assert any("launched without it" in n for n in launched.notes)
    assert fixed_at_launch(plan, plan.details["delay_iterations"], 8) == plan  # launched with it
