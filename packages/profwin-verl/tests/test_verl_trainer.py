"""profwin-verl as a trainer integration: listed under ``profwin.trainers``, and verl's
``global_profiler.steps`` read with core's rollout selection rule."""

from __future__ import annotations

import pytest

import profwin
import profwin_verl


def test_listed_as_a_trainer_integration() -> None:
    (info,) = [p for p in profwin.plugins() if p.group == "profwin.trainers" and p.name == "verl"]
    assert (info.distribution, info.version) == ("profwin-verl", "0.1.0")
    assert info.spec is not None
    assert (info.spec.kind, info.spec.target, info.spec.requires) == (
        "trainer", "profwin_verl.seam:INTEGRATION", ("verl>=0.9,<0.10",)
    )  # fmt: skip


def _trainer(steps: object) -> dict[str, object]:
    block = {
        "tool": "torch",
        "enable": True,
        "tool_config": {"torch": {"discrete": True, "profile_token_start": 2, "profile_token_end": 6}},
    }
    return {"global_profiler": {"tool": "torch", "steps": steps}, "actor_rollout_ref": {"rollout": {"profiler": block}}}


def test_steps_are_a_rollout_selection() -> None:
    run = profwin_verl.load_verl(_trainer([2, 4]), at="actor_rollout_ref.rollout.profiler")
    assert run.rollouts == profwin.Rollouts([2, 4])
    assert [step for step in range(6) if run.profiles_step(step)] == [2, 4]
    every = profwin_verl.load_verl(_trainer(None), at="actor_rollout_ref.rollout.profiler")
    assert (every.enabled, every.rollouts) == (False, None)
    alone = profwin_verl.load_verl(_trainer([1])["actor_rollout_ref"]["rollout"]["profiler"])  # type: ignore[index]
    assert (alone.steps, alone.rollouts, alone.profiles_step(7)) == (None, None, True)


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([1, -2], "global_profiler.steps[1]: a rollout id must be an int >= 0 and <= 9223372036854775807 (got -2)"),
        ([True], "global_profiler.steps[0]: a rollout id must be an int >= 0 (got True, a bool)"),
        ("2", "global_profiler.steps: must be a list of trainer steps or null (got '2')"),
    ],
)
def test_bad_steps_fail_by_cores_rule(steps: object, message: str) -> None:
    with pytest.raises(profwin.ConfigError) as failed:
        profwin_verl.load_verl(_trainer(steps), at="actor_rollout_ref.rollout.profiler")
    assert message in str(failed.value), str(failed.value)
