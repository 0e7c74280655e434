"""Spec -> ProfileReq fields and launch environment, checked without sglang installed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from profwin import ConfigError, ProfileSpec, Window
from profwin_sglang import (
    SGLANG_ACTIVITIES,
    activities_for,
    features,
    launch_env,
    options_of,
    plan_window,
    profile_request,
)

CURRENT = features("0.5.23")


def _spec(tmp_path: Path, **kwargs: object) -> ProfileSpec:
    return ProfileSpec(output_dir=tmp_path, **kwargs)  # type: ignore[arg-type]


def test_request_fields(tmp_path: Path) -> None:
    spec = _spec(tmp_path, window=Window(20, 80), prefix="rollout", shapes=True)
    plan = plan_window(spec.window, features=CURRENT, plugin=True)
    body = profile_request(spec, plan, activities=["CPU", "GPU"], profile_id="pid-1")
    assert body == {
        "output_dir": str(tmp_path),
        "activities": ["CPU", "GPU"],
        "with_stack": False,  # always explicit: SGLang 0.5.23 turns both on when they are left out
        "record_shapes": True,
        "profile_prefix": "rollout",
        "profile_id": "pid-1",
        "merge_profiles": False,
        "profile_by_stage": False,
        "start_step": plan.start_step,
        "num_steps": 60,
    }


def test_immediate_and_unbounded_requests_leave_steps_out(tmp_path: Path) -> None:
    spec = _spec(tmp_path, window=Window(0, None))
    body = profile_request(spec, plan_window(spec.window, features=CURRENT, plugin=False), activities=["CPU"], profile_id="x")
    assert "start_step" not in body
    assert "num_steps" not in body


def test_options(tmp_path: Path) -> None:
    spec = _spec(
        tmp_path,
        window=Window(0, 4),
        options={"sglang": {"by_stage": True, "merge_profiles": True, "detailed_annotations": True}},
    )
    body = profile_request(
        spec, plan_window(spec.window, features=CURRENT, plugin=False, by_stage=True), activities=["CPU"], profile_id="x"
    )
    assert body["profile_by_stage"] is True
    assert body["merge_profiles"] is True
    assert body["detailed_annotations"] is True
    assert body["num_steps"] == 4


def test_unknown_option_suggests_the_right_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="did you mean 'by_stage'") as info:
        options_of(_spec(tmp_path, options={"sglang": {"by_stag": True}}))
    assert info.value.path == "options.sglang"
    with pytest.raises(ConfigError, match="true or false"):
        options_of(_spec(tmp_path, options={"sglang": {"merge_profiles": "yes"}}))


@pytest.mark.parametrize(
    ("device", "expected"), [("cuda", ["CPU", "GPU"]), ("npu", ["CPU", "GPU"]), ("xpu", ["CPU", "XPU"]), ("cpu", ["CPU"])]
)
def test_auto_activities_follow_the_server_device(tmp_path: Path, device: str, expected: list[str]) -> None:
    assert activities_for(_spec(tmp_path), device) == (expected, [])


def test_explicit_activities(tmp_path: Path) -> None:
    spec = _spec(tmp_path, activities=["cuda", "cpu"], memory=True, options={"sglang": {"cuda_profiler": True}})
    assert activities_for(spec, "cuda") == (["CPU", "GPU", "MEM", "CUDA_PROFILER"], [])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory": True}, "memory.*needs a CUDA server"),
        ({"activities": ["cpu", "cuda"]}, "'cuda' cannot be recorded"),
        ({"options": {"sglang": {"cuda_profiler": True}}}, "cuda_profiler.*needs a CUDA server"),
    ],
)
def test_what_a_cpu_server_cannot_record(tmp_path: Path, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        activities_for(_spec(tmp_path, **kwargs), "cpu")
    kept, dropped = activities_for(_spec(tmp_path, on_unavailable="drop", **kwargs), "cpu")
    assert len(dropped) == 1
    assert kept == ["CPU"]


def test_nothing_left_to_record(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"none of \['cuda'\] can be recorded here"):
        activities_for(_spec(tmp_path, activities=["cuda"], on_unavailable="drop"), "cpu")


def test_raw_activity_names_are_validated(tmp_path: Path) -> None:
    # SGLang silently drops names it does not know ("CUDA" is not one of them).
    with pytest.raises(ConfigError, match=r"must be one of \['CPU', 'GPU'.*\(got 'CUDA'\)") as info:
        options_of(_spec(tmp_path, options={"sglang": {"activities": ["CPU", "CUDA"]}}))
    assert info.value.path == "options.sglang.activities[1]"
    spec = _spec(tmp_path, options={"sglang": {"activities": list(SGLANG_ACTIVITIES[:2])}})
    assert activities_for(spec, "cuda") == (["CPU", "GPU"], [])


def test_launch_env(tmp_path: Path) -> None:
    assert launch_env(_spec(tmp_path)) == {
        "SGLANG_TORCH_PROFILER_DIR": str(tmp_path),
        "SGLANG_PROFILE_V2": "0",
        "SGLANG_EXPOSE_OWN_ENV_VARS": "1",
        "SGLANG_PROFILE_WITH_STACK": "false",
        "SGLANG_PROFILE_RECORD_SHAPES": "false",
    }
    env = launch_env(_spec(tmp_path, stack=True, shapes=True))
    assert "SGLANG_PROFILE_WITH_STACK" not in env
    assert "SGLANG_PROFILE_RECORD_SHAPES" not in env


def test_plan_for_reads_the_options_once_and_encodes_the_window_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import profwin_sglang.plan as planning

    calls: list[str] = []

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(planning, "options_of", counted("options_of", planning.options_of))
    monkeypatch.setattr(planning, "plan_window", counted("plan_window", planning.plan_window))
    spec = _spec(tmp_path, window=Window(3, 8), options={"sglang": {"start": "relative", "merge_profiles": True}})
    plan = planning.plan_for(spec, version="0.5.23", given=False, plugin=True, device="cpu")
    assert sorted(calls) == ["options_of", "plan_window"]
    assert plan.mechanism == "relative"
    assert plan.request is not None
    assert plan.request["merge_profiles"] is True
