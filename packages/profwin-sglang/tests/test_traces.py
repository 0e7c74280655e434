"""Finding a session's files by SGLang's names; counting and trimming batches in a real torch trace."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from profwin import EnginePlan, ProfileSpec, Window
from profwin_sglang import plan_for, trim_in_place
from profwin_sglang.traces import collect
from profwin_traces import count_steps, summarize


def step_names(path: Path) -> list[str]:
    return [step.label for step in summarize(path, top=0).steps]


def _plan(tmp_path: Path, *, client_profile_id: bool = True) -> EnginePlan:
    spec = ProfileSpec(window=Window(0, 4), output_dir=tmp_path, prefix="run", activities=["cpu"])
    plan = plan_for(
        spec, version="0.5.23" if client_profile_id else "0.5.10", given=True, plugin=True, device="cpu", profile_id="17-ab"
    )
    return plan


def _touch(path: Path, mtime: float | None = None) -> Path:
    path.write_bytes(b"x" * 10)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_collect_by_profile_id_and_prefix(tmp_path: Path) -> None:
    ours = [
        _touch(tmp_path / "run-17-ab-TP-0.trace.json.gz"),
        _touch(tmp_path / "run-17-ab-TP-1-DP-1.trace.json.gz"),
        _touch(tmp_path / "merged-17-ab.trace.json.gz"),
        _touch(tmp_path / "run-1795970000.12-TP-0-memory.pickle"),  # MEM: named by the server's clock
    ]
    others = [
        _touch(tmp_path / "run-18-cd-TP-0.trace.json.gz"),  # another session
        _touch(tmp_path / "other-17-ab-TP-0.trace.json.gz"),  # another prefix
    ]
    plan = _plan(tmp_path)
    found, _ = collect(plan, lambda: ours + others, stopped=False, producer="sglang@test")
    assert sorted(a.path.name for a in found) == sorted(p.name for p in ours)
    kinds = {a.path.name: (a.kind, a.rank) for a in found}
    assert kinds["run-17-ab-TP-1-DP-1.trace.json.gz"] == ("trace", 1)
    assert kinds["merged-17-ab.trace.json.gz"][0] == "merged-trace"
    assert kinds["run-1795970000.12-TP-0-memory.pickle"][0] == "memory-snapshot"
    assert all(a.bytes == 10 and a.path.is_absolute() for a in found)


def test_collect_without_client_profile_id_takes_new_files_by_prefix(tmp_path: Path) -> None:
    new = _touch(tmp_path / "run-1795970000.7-TP-0.trace.json.gz")
    other = _touch(tmp_path / "zzz-1795970000.7-TP-0.trace.json.gz")
    found, _ = collect(_plan(tmp_path, client_profile_id=False), lambda: [new, other], stopped=False, producer="p")
    assert [a.path for a in found] == [new]


@pytest.mark.torch
def test_count_and_trim_sglang_steps(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    names = ["step[EXTEND bs=1 toks=4]"] + [f"step[DECODE bs={i}]" for i in range(1, 8)]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for name in names:
            with torch.profiler.record_function("scheduler.run_batch"), torch.profiler.record_function(name):
                torch.ones(64).sum()
    path = tmp_path / "run-1-TP-0.trace.json.gz"
    raw = tmp_path / "raw.json"
    prof.export_chrome_trace(str(raw))
    with gzip.open(path, "wb") as f:
        f.write(raw.read_bytes())
    assert step_names(path) == names
    assert count_steps(path) == 8
    assert trim_in_place(path, Window(3, 6)) == 3
    assert step_names(path) == names[3:6]
    assert not list(tmp_path.glob(".profwin-trim-*"))
    assert trim_in_place(path, Window(50, 60)) == 0  # none of its batches: left as it was
    assert step_names(path) == names[3:6]
