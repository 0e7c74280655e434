"""Trace discovery and step counting, on traces written by the real torch profiler (CPU)."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from profwin import Window
from profwin_vllm.traces import TraceFile, session_artifacts

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


def write_trace(path: Path, step_names: list[str], other_names: tuple[str, ...] = ("sampler", "execute_model_outer")) -> Path:
    """A real torch chrome trace with one record_function per name, like vLLM's worker writes."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for name in step_names:
            with record_function(name):
                torch.ones(2) + 1
        for name in other_names:
            with record_function(name):
                torch.ones(2) * 2
    plain = path.with_name(path.name.removesuffix(".gz"))
    prof.export_chrome_trace(str(plain))
    if path.name.endswith(".gz"):
        with plain.open("rb") as src, gzip.open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        plain.unlink()
    return path


STEPS = ["execute_context_1(6)_generation_0(0)"] + ["execute_context_0(0)_generation_1(1)"] * 4


@pytest.mark.parametrize(
    ("name", "worker", "rank", "frontend"),
    [
        ("sess_rank0.1795971004758316367.pt.trace.json.gz", "sess_rank0", 0, False),
        ("sess_dp0_pp0_tp1_dcp0_ep0_rank3.12.pt.trace.json", "sess_dp0_pp0_tp1_dcp0_ep0_rank3", 3, False),
        ("1f2e-rank-2.12.pt.trace.json.gz", "1f2e-rank-2", 2, False),
        ("srv_vm_14144.async_llm.12.pt.trace.json.gz", "srv_vm_14144.async_llm", None, True),
    ],
)
def test_trace_file_names(name: str, worker: str, rank: int | None, frontend: bool) -> None:
    parsed = TraceFile.parse(Path(name))
    assert parsed is not None
    assert (parsed.worker, parsed.rank, parsed.frontend, parsed.time_ns) == (
        worker,
        rank,
        frontend,
        12 if "12" in name else parsed.time_ns,
    )


def test_prefix_must_match_whole() -> None:
    trace = TraceFile.parse(Path("a_b_rank0.1.pt.trace.json.gz"))
    assert trace is not None
    assert trace.has_prefix("a_b")
    assert not trace.has_prefix("a")
    assert TraceFile.parse(Path("notes.txt")) is None


def test_session_artifacts_steps_ranks_and_summaries(tmp_path: Path) -> None:
    rank0 = write_trace(tmp_path / "s_rank0.100.pt.trace.json.gz", STEPS[1:4])
    rank1 = write_trace(tmp_path / "s_dp0_pp0_tp1_dcp0_ep0_rank1.100.pt.trace.json.gz", STEPS[1:4])
    other = write_trace(tmp_path / "t_rank0.100.pt.trace.json.gz", STEPS)
    summary = tmp_path / "s_rank0.profiler_out.txt"
    summary.write_text("table")
    stale = tmp_path / "s_dp0_pp0_tp1_dcp0_ep0_rank1.profiler_out.txt"
    stale.write_text("older session's table")
    os.utime(stale, ns=(50, 50))  # written before the trace (time_ns 100): not this session's
    found = session_artifacts(set(tmp_path.iterdir()), window=Window(2, 5), prefix="s", ranks="all", producer="vllm")
    assert [(a.path.name, a.kind, a.rank, str(a.steps)) for a in found] == [
        (rank0.name, "trace", 0, "2:5"),
        (summary.name, "summary", 0, "2:5"),
        (rank1.name, "trace", 1, "2:5"),
    ]
    assert all(a.bytes == a.path.stat().st_size for a in found)
    only0 = session_artifacts(set(tmp_path.iterdir()), window=Window(2, 5), prefix="s", ranks=(0,), producer="vllm")
    assert {a.rank for a in only0} == {0}
    assert other.name not in {a.path.name for a in only0}


def test_trace_with_no_steps_covers_none(tmp_path: Path) -> None:
    empty = write_trace(tmp_path / "e_rank0.1.pt.trace.json.gz", [])
    (artifact,) = session_artifacts({empty}, window=Window(3, 6), prefix="e", ranks=(0,), producer="vllm")
    assert artifact.steps is None
