"""profwin_verl's rollout trace functions on real files: directories, rank mapping, relocation, trimming.

integration_tests/verl compares every one of them with verl 0.9.1's own on the same inputs; here
they run without verl, on the plain-dict form of verl's ProfilerConfig.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import profwin
import profwin.installed
from profwin.errors import ArgumentTypeError
from profwin_traces import summarize
from profwin_verl import (
    relocate_rollout_traces,
    rollout_profiler_global_ranks,
    rollout_trace_dir,
    rollout_trace_local_rank,
)
from profwin_verl.traces import expect_trim


def config(save_path: Path | str, **changes: Any) -> dict[str, Any]:
    return {"tool": "torch", "enable": True, "save_path": str(save_path), "relocate_results": True, **changes}


def test_trace_dir_and_global_ranks() -> None:
    assert rollout_trace_dir(config("outputs/profile"), 3) == os.path.join("outputs/profile", "agent_loop_rollout_replica_3")
    assert rollout_profiler_global_ranks(None) is None
    assert rollout_profiler_global_ranks(config("p", all_ranks=True, ranks=[1])) is None
    assert rollout_profiler_global_ranks(config("p", ranks=[])) is None
    assert rollout_profiler_global_ranks(config("p", ranks=[8, 0, 8])) == {0, 8}


@pytest.mark.parametrize("save_path", [None, "", "a\0b", 5])
def test_a_save_path_that_is_no_path_is_a_config_error_in_every_builder(save_path: object, tmp_path: Path) -> None:
    """verl's own builders raise TypeError from os.path.join for ``save_path: null``."""
    from profwin_verl import build_sglang_profiler_args, build_vllm_profiler_args

    block = {**config("x"), "save_path": save_path}
    tool = {"contents": [], "profile_token_start": 1, "profile_token_end": 3}
    for call in (
        lambda: rollout_trace_dir(block, 0),
        lambda: relocate_rollout_traces(block, 0),
        lambda: build_vllm_profiler_args(block, tool, 0, legacy_env=False),
        lambda: build_sglang_profiler_args(block, tool, 0),
    ):
        with pytest.raises(profwin.ConfigError, match=r"^profiler_config\.save_path: must be the folder verl saves profiles in"):
            call()
    with pytest.raises(ArgumentTypeError, match=r"^rank: must be int \(got '0'\)$"):
        rollout_trace_dir(config(tmp_path), "0")  # type: ignore[arg-type]


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
        "import sys, profwin_verl; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('verl', 'omegaconf', 'yaml', 'torch', 'vllm', 'sglang', 'profwin_vllm', 'profwin_sglang')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_deliver_switch_keeps_the_traces_when_it_cannot_deliver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """PROFWIN_VERL_DELIVER=ray without profwin-ray (or outside Ray): relocation still moves the
    traces locally, says why they were not delivered, and never fails. (Delivery itself runs on
    a real Ray cluster in integration_tests/ray.)"""
    real = profwin.installed.entry_points

    def without_clusters(group: str) -> object:
        return [] if group == "profwin.clusters" else real(group)

    monkeypatch.setattr(profwin.installed, "entry_points", without_clusters)
    monkeypatch.setenv("PROFWIN_VERL_DELIVER", "ray")
    cfg = config(tmp_path)
    make_traces(Path(rollout_trace_dir(cfg, 0)), ["a-TP-0.trace.json.gz"])
    moved = relocate_rollout_traces(cfg, 0)
    assert moved == [str(tmp_path / "rollout-replica0_a-TP-0.trace.json.gz")]
    assert Path(moved[0]).read_text() == "a-TP-0.trace.json.gz"
    err = capsys.readouterr().err
    assert "PROFWIN_VERL_DELIVER=ray: rollout traces not delivered to the driver's node" in err
    assert "pip install 'profwin[ray]'" in err
    assert f"they stay in {tmp_path} on this node" in err
