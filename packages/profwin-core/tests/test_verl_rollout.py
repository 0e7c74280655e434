"""profwin.verl's rollout trace functions on real files: directories, rank mapping, relocation, trimming.

integration_tests/verl compares every one of them with verl 0.9.1's own on the same inputs; here
they run without verl, on the plain-dict form of verl's ProfilerConfig.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin.traces import summarize
from profwin.verl import (
    build_sglang_profiler_args,
    build_vllm_profiler_args,
    relocate_rollout_traces,
    rollout_profiler_global_ranks,
    rollout_trace_dir,
    rollout_trace_local_rank,
)
from profwin.verl.builders import sglang_plugin_installed
from profwin.verl.rollout import expect_trim


def config(save_path: Path | str, **changes: Any) -> dict[str, Any]:
    return {"tool": "torch", "enable": True, "save_path": str(save_path), "relocate_results": True, **changes}


def test_trace_dir_and_global_ranks() -> None:
    assert rollout_trace_dir(config("outputs/profile"), 3) == os.path.join("outputs/profile", "agent_loop_rollout_replica_3")
    assert rollout_profiler_global_ranks(None) is None
    assert rollout_profiler_global_ranks(config("p", all_ranks=True, ranks=[1])) is None
    assert rollout_profiler_global_ranks(config("p", ranks=[])) is None
    assert rollout_profiler_global_ranks(config("p", ranks=[8, 0, 8])) == {0, 8}


@pytest.mark.parametrize(
    ("name", "world", "local"),
    [
        ("1700-TP-1.trace.json.gz", 2, 1),
        ("1700-TP-1-EXTEND.trace.json.gz", 4, 1),
        ("1700-TP-1-DP-1.trace.json.gz", 4, None),  # layout-dependent: no guess
        ("1700-TP-5.trace.json.gz", 4, None),  # outside the replica
        ("profwin-rank-3.pt.trace.json.gz", 4, 3),
        ("server_rank2.pt.trace.json.gz", 4, 2),
        ("host_123.1700.pt.trace.json.gz", 4, None),
        ("1700-TP-1.trace.json.gz", 1, None),  # one GPU: the replica index is the rank
    ],
)
def test_local_rank_from_file_names(name: str, world: int, local: int | None) -> None:
    assert rollout_trace_local_rank(name, world) == local


def make_traces(directory: Path, names: list[str]) -> None:
    directory.mkdir(parents=True)
    for name in names:
        (directory / name).write_text(name)


def test_relocation_moves_requested_ranks_and_keeps_the_rest(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    src = Path(rollout_trace_dir(cfg, 1))
    make_traces(src, ["a-TP-0.trace.json.gz", "a-TP-1.trace.json.gz", "host.pt.trace.json.gz"])
    moved = relocate_rollout_traces(cfg, 1, 2, keep_global_ranks={2})
    # Replica 1 of 2-GPU replicas owns global ranks 2 and 3; 3 was not asked for, the host file has no rank.
    assert sorted(Path(p).name for p in moved) == [
        "rollout-replica1-globalrank2_a-TP-0.trace.json.gz",
        "rollout-replica1_host.pt.trace.json.gz",
    ]
    assert all(Path(p).parent == tmp_path for p in moved)
    assert sorted(os.listdir(src)) == ["a-TP-1.trace.json.gz"]


def test_no_relocation_unless_asked(tmp_path: Path) -> None:
    cfg = config(tmp_path, relocate_results=False)
    make_traces(Path(rollout_trace_dir(cfg, 0)), ["a-TP-0.trace.json.gz"])
    assert relocate_rollout_traces(cfg, 0) == []
    assert relocate_rollout_traces(config(tmp_path / "missing"), 0) == []


@pytest.mark.torch
def test_relocation_trims_a_whole_session_trace_to_the_window(tmp_path: Path) -> None:
    """The trim fallback inside verl's flow: the engine recorded steps 0:8 of the session, the
    builder asked for 2:5, relocation after the stop cuts the new trace down to those steps."""
    torch = pytest.importorskip("torch")
    cfg = config(tmp_path)
    trace_dir = Path(rollout_trace_dir(cfg, 0))
    trace_dir.mkdir(parents=True)
    (trace_dir / "old.pt.trace.json").write_text("{}")  # written before this session: left alone
    expect_trim(str(trace_dir), profwin.Window(2, 5))
    spec = profwin.ProfileSpec(window=profwin.Window(0, 8), output_dir=trace_dir, prefix="engine")
    with profwin.Session(spec, profiler="torch") as session:  # stands in for the engine's whole-session trace
        for _ in range(10):
            torch.randn(8, 8).matmul(torch.randn(8, 8))
            session.step()
    (artifact,) = session.artifacts
    assert len(summarize(artifact.path).steps) == 8
    moved = relocate_rollout_traces(cfg, 0)
    (trimmed,) = (Path(p) for p in moved if "engine" in p)
    steps = summarize(trimmed).steps
    assert [s.number for s in steps] == [2, 3, 4]
    assert (tmp_path / "rollout-replica0_old.pt.trace.json").read_text() == "{}"
    expect_trim(str(trace_dir), None)


def test_profwin_verl_imports_neither_verl_nor_an_engine() -> None:
    code = (
        "import sys, profwin.verl; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('verl', 'omegaconf', 'yaml', 'torch', 'vllm', 'sglang', 'profwin_vllm', 'profwin_sglang')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


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


def test_sglang_builder_relative_with_the_server_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGLANG_PLUGINS", raising=False)
    assert sglang_plugin_installed()  # profwin-sglang is installed in this workspace
    with pytest.warns(UserWarning, match="does not support memory profiling"):
        args = build_sglang_profiler_args(config(tmp_path), TOOL, 0)
    assert args == {
        "output_dir": rollout_trace_dir(config(tmp_path), 0),
        "with_stack": True,
        "record_shapes": False,
        "start_step": 2**40 + 2,
        "num_steps": 3,
    }


@pytest.mark.torch
def test_sglang_builder_without_the_plugin_records_from_zero_and_relocation_trims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("SGLANG_PLUGINS", "another_plugin")  # SGLang would not load profwin's
    assert not sglang_plugin_installed()
    cfg = config(tmp_path, relocate_results=False)
    tool = {"contents": [], "profile_token_start": 2, "profile_token_end": 5}
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
    import profwin.verl.builders as builders

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
