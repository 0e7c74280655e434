"""profwin_verl's builders on the workspace's real vLLM and SGLang backends (found by entry
points), without verl or an engine: the keys verl sends, the window from each engine's plan, and
the SGLang trim fallback finished by the relocation. The same functions beside verl's own, on
verl's objects: test_side_by_side.py."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin.errors import WindowWarning
from profwin_traces import summarize
from profwin_verl import build_sglang_profiler_args, build_vllm_profiler_args, relocate_rollout_traces, rollout_trace_dir
from profwin_verl.traces import expect_trim

from ..sglang.conftest import package_site


@pytest.fixture
def sglang_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Make a cached environment's real SGLang package *installed* in this process (its files and
    dist-info on sys.path; nothing imports it), as it is where verl's builders run."""

    def install(python: Path) -> None:
        monkeypatch.syspath_prepend(str(package_site(python, tmp_path / f"site-{python.parent.parent.name}")))

    return install


def config(save_path: Path | str, **changes: Any) -> dict[str, Any]:
    return {"tool": "torch", "enable": True, "save_path": str(save_path), "relocate_results": True, **changes}


TOOL = {"contents": ["stack", "memory"], "profile_token_start": 2, "profile_token_end": 5}


def test_vllm_builder_keeps_verl_keys_and_exports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("VLLM_TORCH_PROFILER_DIR", "VLLM_TORCH_PROFILER_WITH_STACK", "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY"):
        monkeypatch.delenv(key, raising=False)
    cfg = config(tmp_path)
    result = build_vllm_profiler_args(cfg, TOOL, 3)
    assert list(result) == ["profiler_config"]
    sent = json.loads(result["profiler_config"])
    assert sent["torch_profiler_dir"] == rollout_trace_dir(cfg, 3)
    assert (sent["torch_profiler_with_stack"], sent["torch_profiler_with_memory"], sent["ignore_frontend"]) == (
        True,
        True,
        "true",
    )
    assert (sent["delay_iterations"], sent["max_iterations"]) == (3, 3)  # vLLM counts from 1: step 2 is its 3rd
    assert os.environ["VLLM_TORCH_PROFILER_DIR"] == rollout_trace_dir(cfg, 3)
    assert os.environ["VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY"] == "1"
    assert build_vllm_profiler_args(cfg, {"profile_token_start": 2}, 0) == {}  # verl: no contents, nothing built
    assert build_vllm_profiler_args(None, TOOL, 0) == {}


def test_sglang_builder_token_window_with_the_server_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sglang_python: Path, sglang_here: Any
) -> None:
    monkeypatch.delenv("SGLANG_PLUGINS", raising=False)
    sglang_here(sglang_python)  # SGLang 0.5.23; profwin-sglang's entry point is installed in this workspace
    with pytest.warns(UserWarning, match="does not support memory profiling"):
        args = build_sglang_profiler_args(config(tmp_path), TOOL, 0)
    assert args == {
        "output_dir": rollout_trace_dir(config(tmp_path), 0),
        "with_stack": True,
        "record_shapes": False,
        "start_step": 2**41 + 2,  # profile_token_start/end: tokens 2..4, encoded for the server plugin
        "num_steps": 3,
    }


@pytest.mark.parametrize(
    ("sglang", "plugins", "why", "extra"),
    [
        (None, None, "SGLang is not installed in this environment", 1),
        ("0.5.12", None, "SGLang 0.5.12 has no sglang.srt.managers.scheduler_components.profiler_manager", 1),
        ("0.5.23", "another_plugin", "SGLANG_PLUGINS='another_plugin' leaves out 'profwin'", 0),
    ],
)
def test_sglang_builder_judges_the_sglang_installed_where_it_runs(
    sglang: str | None,
    plugins: str | None,
    why: str,
    extra: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: Any,
) -> None:
    """The entry point alone is not enough: the relative start is sent only where register() can
    hook the SGLang installed in this process; otherwise 0:end, trimmed, and a warning says why.
    Before 0.5.23 (or unknown) immediate mode records one batch fewer: one more is asked for."""
    if sglang is not None:
        fixture = "old_sglang_python" if sglang == "0.5.12" else "sglang_python"
        request.getfixturevalue("sglang_here")(request.getfixturevalue(fixture))
    if plugins is None:
        monkeypatch.delenv("SGLANG_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("SGLANG_PLUGINS", plugins)
    tool = {"contents": [], "profile_token_start": 2, "profile_token_end": 5}
    with pytest.warns(WindowWarning, match="not active on this SGLang") as caught:
        args = build_sglang_profiler_args(config(tmp_path), tool, 0)
    assert (args["start_step"], args["num_steps"]) == (None, 5 + extra)
    assert why in str(caught[0].message)


def test_without_a_window_the_builders_return_what_verl_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sglang_python: Path, sglang_here: Any
) -> None:
    """verl 0.9.1's own values with no profile_token_start/end: vLLM delay 0 and max 0 (start at
    start_profile, no limit), SGLang start_step and num_steps None; on SGLang with the server
    plugin too (it would otherwise get the encoded start)."""
    monkeypatch.delenv("SGLANG_PLUGINS", raising=False)
    sglang_here(sglang_python)
    monkeypatch.delenv("VLLM_PROFILER_DELAY_ITERS", raising=False)
    cfg, tool = config(tmp_path), {"contents": []}
    sent = json.loads(build_vllm_profiler_args(cfg, tool, 0)["profiler_config"])
    assert (sent["delay_iterations"], sent["max_iterations"]) == (0, 0)
    assert "VLLM_PROFILER_DELAY_ITERS" not in os.environ
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no window, nothing to warn about
        args = build_sglang_profiler_args(cfg, tool, 0)
    assert (args["start_step"], args["num_steps"]) == (None, None)


@pytest.mark.torch
def test_sglang_builder_without_the_plugin_records_from_zero_and_relocation_trims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sglang_python: Path, sglang_here: Any
) -> None:
    torch = pytest.importorskip("torch")
    sglang_here(sglang_python)
    monkeypatch.setenv("SGLANG_PLUGINS", "another_plugin")  # SGLang would not load profwin's
    cfg = config(tmp_path, relocate_results=False)
    tool = {"contents": [], "profile_token_start": 2, "profile_token_end": 5}
    with pytest.warns(WindowWarning, match="SGLANG_PLUGINS"):
        args = build_sglang_profiler_args(cfg, tool, 0)
    assert (args["start_step"], args["num_steps"]) == (None, 5)
    # What the engine then writes: steps 0:5 of the session (a real torch trace stands in for it).
    spec = profwin.ProfileSpec(window=profwin.Window(0, 5), output_dir=args["output_dir"], prefix="engine")
    with profwin.Session(spec, profiler="torch") as session:
        for _ in range(6):
            torch.randn(8, 8).matmul(torch.randn(8, 8))
            session.step()
    (artifact,) = session.artifacts
    assert relocate_rollout_traces(cfg, 0) == []  # not relocated (relocate_results false), but cut
    assert [s.number for s in summarize(artifact.path).steps] == [2, 3, 4]
    expect_trim(args["output_dir"], None)


def test_vllm_builder_exports_the_window_for_vllm_0_12(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM 0.12 reads no profiler_config: with legacy_env the window goes out as environment variables."""
    import profwin_verl.builders as builders

    plan_0_12 = profwin.backend("vllm").plan(
        profwin.ProfileSpec(window=profwin.Window(2, 5), output_dir=tmp_path), version="0.12.0"
    )
    monkeypatch.setattr(builders, "engine_plan", lambda *args, **kwargs: plan_0_12)  # as if vLLM 0.12 were installed
    for key in plan_0_12.env:
        monkeypatch.delenv(key, raising=False)
    build_vllm_profiler_args(config(tmp_path), TOOL, 0)
    assert plan_0_12.env["VLLM_PROFILER_DELAY_ITERS"] == os.environ["VLLM_PROFILER_DELAY_ITERS"] == "3"
    assert os.environ["VLLM_PROFILER_MAX_ITERS"] == "3"
    assert os.environ["VLLM_TORCH_PROFILER_DIR"] == rollout_trace_dir(config(tmp_path), 0)  # verl's value, as verl sets it


def test_one_key_of_profwins_beside_verls_tool_blocks_asks_for_the_session_timeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sglang_python: Path, sglang_here: Any
) -> None:
    """``tool_config.profwin.timeline: true`` (verl keeps ``tool_config`` an open mapping): the
    SGLang engine launched from here runs the server plugin, so its start carries the timeline's
    flag on top of the token window; where the engine cannot record one (no vLLM here), the window
    is sent as without the key, with a warning that says why."""
    monkeypatch.delenv("SGLANG_PLUGINS", raising=False)
    sglang_here(sglang_python)
    cfg = config(tmp_path, tool_config={"torch": TOOL, "profwin": {"timeline": True}})
    with pytest.warns(UserWarning, match="does not support memory profiling"):
        args = build_sglang_profiler_args(cfg, TOOL, 0)
    assert args["start_step"] == 2**43 + 2**41 + 2  # profwin.runtime.timeline_record.FLAG on the encoded token window
    assert args["num_steps"] == 3
    with pytest.warns(WindowWarning, match="no session timeline is recorded: vLLM is not installed in this environment"):
        sent = json.loads(build_vllm_profiler_args(cfg, TOOL, 0)["profiler_config"])
    assert (sent["delay_iterations"], sent["max_iterations"]) == (3, 3)
    with pytest.raises(profwin.ConfigError, match=r"tool_config\.profwin\.timeline: must be true or false"):
        build_sglang_profiler_args(config(tmp_path, tool_config={"profwin": {"timeline": "yes"}}), TOOL, 0)
