"""Window and spec -> vLLM settings, for every version line. No vLLM needed.

The step rule vLLM applies to delay_iterations/max_iterations is restated here from vLLM's
``WorkerProfiler.step`` (vllm/profiler/wrapper.py, 0.32.0) as ``vllm_records``; the mapping is
checked against it for many windows, and integration_tests/vllm checks both on a real engine.
"""

from __future__ import annotations

import ast
import json
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profwin import ConfigError, EnginePlan, ProfileSpec, Window, render_plan
from profwin.runtime.versions import EngineVersion
from profwin_vllm import Mechanism, delay_iterations, max_iterations, mechanism, plan_for

V032 = "0.32.0"


def settings_for(spec: ProfileSpec, version: str) -> EnginePlan:
    return plan_for(spec, EngineVersion.parse(version))


def vllm_records(delay: int, limit: int, steps_run: int) -> list[int]:
    """0-based steps vLLM records: step() runs at the top of each step; recording starts at once
    when delay == 0, else in the step whose 1-based count equals delay; it stops at the top of
    the step where the count of recorded steps would exceed max (0 = no limit)."""
    running = delay == 0
    recorded_count = 0
    recorded = []
    for index in range(steps_run):
        count = index + 1
        if not running and delay > 0 and count == delay:
            running = True
        if running:
            recorded_count += 1
        if limit > 0 and running and recorded_count > limit:
            break
        if running:
            recorded.append(index)
    return recorded


@settings(deadline=None)  # shared CI machines: no timing limit on a pure function
@given(
    start=st.integers(min_value=0, max_value=60),
    length=st.one_of(st.none(), st.integers(min_value=1, max_value=60)),
    steps_run=st.integers(min_value=0, max_value=150),
)
def test_mapping_records_exactly_the_window(start: int, length: int | None, steps_run: int) -> None:
    window = Window(start, None if length is None else start + length)
    recorded = vllm_records(delay_iterations(window), max_iterations(window), steps_run)
    clipped = window.clip(steps_run)
    assert recorded == ([] if clipped is None else list(range(clipped.start, clipped.end or steps_run)))


def test_naive_delay_equal_to_start_is_one_step_early() -> None:
    window = Window(20, 80)
    assert vllm_records(window.start, window.length or 0, 200) == list(range(19, 79))
    assert vllm_records(delay_iterations(window), max_iterations(window), 200) == list(range(20, 80))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0.11.2", Mechanism.NONE),
        ("0.12.0", Mechanism.ENV),
        ("0.12.0rc1", Mechanism.NONE),  # a release candidate is not the release
        ("0.13.0", Mechanism.LAUNCH_CONFIG),
        ("0.31.0+cpu", Mechanism.LAUNCH_CONFIG),
        ("v0.32.0", Mechanism.PER_SESSION),
        ("0.33.0.dev12", Mechanism.PER_SESSION),
        ("1.0", Mechanism.PER_SESSION),
    ],
)
def test_version_mechanism(text: str, expected: Mechanism) -> None:
    assert mechanism(EngineVersion.parse(text)) is expected


def test_bad_version_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"engine_version: must be a version like 0\.32\.0 or 0\.12\.0rc1 \(got 'latest'\)"):
        EngineVersion.parse("latest")


def spec(window: str = "20:80", **kw: object) -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), output_dir="/data/traces", **kw)  # type: ignore[arg-type]


def test_032_sends_launch_config_and_per_session_bounds() -> None:
    settings = settings_for(spec(prefix="rollout"), V032)
    assert settings.mechanism == Mechanism.PER_SESSION.value
    assert dict(settings.launch.get("profiler_config") or {}) == {
        "profiler": "torch",
        "torch_profiler_dir": "/data/traces",
        "torch_profiler_with_stack": False,
        "torch_profiler_record_shapes": False,
        "torch_profiler_with_memory": False,
        "torch_profiler_with_flops": False,
        "torch_profiler_use_gzip": True,
        "ignore_frontend": True,
        "delay_iterations": 21,
        "max_iterations": 60,
    }
    assert dict(settings.details["start_kwargs"]) == {"profile_prefix": "rollout", "delay_iterations": 21, "max_iterations": 60}
    assert dict(settings.request or {}) == dict(settings.details["start_kwargs"])
    assert dict(settings.env) == {}


def test_record_options_and_activities() -> None:
    chosen = spec(shapes=True, stack=True, memory=True, flops=True, activities=["cuda", "cpu"])
    config = settings_for(chosen, V032).launch.get("profiler_config") or {}
    assert config["torch_profiler_with_stack"] is True
    assert config["torch_profiler_record_shapes"] is True
    assert config["torch_profiler_with_memory"] is True
    assert config["torch_profiler_with_flops"] is True
    assert config["torch_profiler_activities"] == ["CPU", "CUDA"]
    # vLLM has no module switch of its own: module frames come with Python stacks.
    assert (settings_for(spec(modules=True), V032).launch.get("profiler_config") or {})["torch_profiler_with_stack"] is True


def test_relative_output_dir_becomes_absolute(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))
    config = settings_for(ProfileSpec(window=Window(0, 2), output_dir="traces"), V032).launch.get("profiler_config") or {}
    assert config["torch_profiler_dir"] == f"{tmp_path}/traces"


def test_options_frontend_and_gzip() -> None:
    chosen = spec(options={"vllm": {"frontend": True, "gzip": False}})
    settings = settings_for(chosen, V032)
    assert (settings.launch.get("profiler_config") or {})["ignore_frontend"] is False
    assert (settings.launch.get("profiler_config") or {})["torch_profiler_use_gzip"] is False
    assert any("frontend also writes" in note for note in settings.notes)


def test_unknown_option_suggests_the_close_one() -> None:
    with pytest.raises(ConfigError, match=r"options\.vllm: unknown key 'frontnd'.*did you mean 'frontend'"):
        settings_for(spec(options={"vllm": {"frontnd": True}}), V032)


def test_cpu_platform_accepts_only_cpu() -> None:
    cuda_on_cpu = spec(activities=["cpu", "cuda"], options={"vllm": {"platform": "cpu"}})
    with pytest.raises(
        ConfigError, match=r"activities\[1\]: 'cuda' cannot be recorded: vLLM on platform 'cpu' accepts only \['cpu'\]"
    ):
        settings_for(cuda_on_cpu, V032)
    with pytest.warns(UserWarning, match="dropping activity 'cuda'"):
        dropped = settings_for(cuda_on_cpu.replace(on_unavailable="drop"), V032)
    assert (dropped.launch.get("profiler_config") or {})["torch_profiler_activities"] == ["CPU"]


def test_npu_activity_points_at_vllm_ascend() -> None:
    with pytest.raises(ConfigError, match="vllm-ascend records CPU and NPU by itself"):
        settings_for(spec(activities=["npu"]), V032)
    ascend = settings_for(spec(activities=["npu"], options={"vllm": {"platform": "ascend"}}), V032)
    assert "torch_profiler_activities" not in (ascend.launch.get("profiler_config") or {})


def test_013_to_031_window_only_at_launch() -> None:
    settings = settings_for(spec(prefix="p"), "0.20.0")
    assert settings.mechanism == Mechanism.LAUNCH_CONFIG.value
    assert (settings.launch.get("profiler_config") or {})["delay_iterations"] == 21
    assert dict(settings.details["start_kwargs"]) == {"profile_prefix": "p"}
    assert settings.request is None
    # Before 0.17, start_profile took no arguments at all.
    assert dict(settings_for(spec(), "0.16.0").details["start_kwargs"]) == {}


def test_012_uses_environment_variables() -> None:
    settings = settings_for(spec(), "0.12.0")
    assert settings.launch == {}
    assert dict(settings.env) == {
        "VLLM_TORCH_PROFILER_DIR": "/data/traces",
        "VLLM_TORCH_PROFILER_WITH_STACK": "0",
        "VLLM_TORCH_PROFILER_RECORD_SHAPES": "0",
        "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY": "0",
        "VLLM_TORCH_PROFILER_WITH_FLOPS": "0",
        "VLLM_PROFILER_DELAY_ITERS": "21",
        "VLLM_PROFILER_MAX_ITERS": "60",
        "VLLM_TORCH_PROFILER_DISABLE_ASYNC_LLM": "1",
        "VLLM_TORCH_PROFILER_USE_GZIP": "1",
    }
    with pytest.raises(ConfigError, match=r"vLLM 0\.12\.0 has no setting for activities"):
        settings_for(spec(activities=["cpu"]), "0.12.0")
    with pytest.raises(ConfigError, match="on CPU ignores VLLM_PROFILER_DELAY_ITERS"):
        settings_for(spec(options={"vllm": {"platform": "cpu"}}), "0.12.0")


def test_before_012_only_the_whole_session() -> None:
    with pytest.raises(ConfigError, match=r"window: vLLM 0.11.2 cannot record a window of steps.*window ':' \(got 20:80\)"):
        settings_for(spec(), "0.11.2")
    whole = settings_for(spec(":"), "0.11.2")
    assert whole.mechanism == Mechanism.NONE.value
    assert whole.env["VLLM_TORCH_PROFILER_DIR"] == "/data/traces"
    assert "VLLM_PROFILER_DELAY_ITERS" not in whole.env


def test_render_serve_is_a_pasteable_flag() -> None:
    settings = settings_for(spec(), V032)
    first, *comments = render_plan(settings, "serve").splitlines()
    flag, value = shlex.split(first)
    assert flag == "--profiler-config"
    assert json.loads(value) == dict(settings.launch.get("profiler_config") or {})
    assert all(line.startswith("#") for line in comments)


def test_render_llm_is_a_python_keyword() -> None:
    settings = settings_for(spec(), V032)
    first = render_plan(settings, "llm").splitlines()[0]
    name, _, literal = first.partition("=")
    assert name == "profiler_config"
    assert ast.literal_eval(literal) == dict(settings.launch.get("profiler_config") or {})


def test_render_http_and_env() -> None:
    assert json.loads(render_plan(settings_for(spec(prefix="x"), V032), "http")) == {
        "profile_prefix": "x",
        "delay_iterations": 21,
        "max_iterations": 60,
    }
    exports = render_plan(settings_for(spec(), "0.12.0"), "env").splitlines()
    assert "export VLLM_PROFILER_DELAY_ITERS=21" in exports
    assert render_plan(settings_for(spec(), "0.12.0"), "serve").splitlines()[0] == "# no launch arguments needed"


@pytest.mark.parametrize(
    ("version", "form", "message"),
    [
        ("0.32.0", "env", "takes its profiler settings as launch arguments"),
        ("0.14.0", "env", "takes its profiler settings as launch arguments"),
        ("0.20.0", "http", "takes no per-session request"),
        ("0.12.0", "json", "takes no per-session request"),
        ("0.32.0", "yaml", "form: must be one of"),
    ],
)
def test_render_refuses_forms_a_version_cannot_take(version: str, form: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        render_plan(settings_for(spec(), version), form)
