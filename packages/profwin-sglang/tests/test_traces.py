"""Finding a session's files by SGLang's names; counting and trimming batches in a real torch trace."""

from __future__ import annotations

import gzip
import json
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


def _batches(*names: str) -> bytes:
    """A Chrome trace of SGLang's batch spans, as its scheduler writes one per batch, gzipped."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": n, "pid": 1, "tid": 1, "ts": 10.0 * k, "dur": 9.0}
        for k, n in enumerate(names)
    ]
    return gzip.compress(json.dumps({"traceEvents": events}).encode())


ONE_BATCH = _batches("step[DECODE bs=1]")


def _touch(path: Path, mtime: float | None = None) -> Path:
    path.write_bytes(ONE_BATCH)
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
    assert all(a.bytes == len(ONE_BATCH) and a.path.is_absolute() for a in found)


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


def _stock(tmp_path: Path, window: str) -> EnginePlan:
    """A stock server's plan (no plugin): a window from 0 records at once, a later one from the
    session start and is trimmed after the stop."""
    spec = ProfileSpec(window=Window.parse(window), output_dir=tmp_path, prefix="run", activities=["cpu"])
    return plan_for(spec, version="0.5.23", given=True, plugin=False, device="cpu", profile_id="17-ab")


@pytest.mark.parametrize("window", ["0:4", "2:5"])
def test_a_trace_without_a_batch_is_no_trace_of_the_window_and_stays(tmp_path: Path, window: str) -> None:
    """No batch ran (or its spans are not SGLang's): the stop says nothing was recorded, as every
    engine's does, and the file stays as the server wrote it."""
    trace = tmp_path / "run-17-ab-TP-0.trace.json.gz"
    trace.write_bytes(_batches("something else"))
    found, notes = collect(_stock(tmp_path, window), lambda: [trace], stopped=True, producer="p")
    assert found == []
    assert notes == [f"{trace.name} holds no batch: window {window} never started (left as the server wrote it)"]
    assert trace.read_bytes() == _batches("something else")


def test_batches_all_before_the_window_are_cut_out(tmp_path: Path) -> None:
    trace = tmp_path / "run-17-ab-TP-0.trace.json.gz"
    trace.write_bytes(_batches("step[EXTEND bs=1 toks=4]", "step[DECODE bs=1]"))
    found, notes = collect(_stock(tmp_path, "2:5"), lambda: [trace], stopped=True, producer="p")
    assert found == []
    assert notes == ["the server ran 2 batch(es) of 0:5: window 2:5 never started"]
    assert not trace.exists()


def test_a_trace_this_machine_cannot_read_stays_whole(tmp_path: Path) -> None:
    """The start's warning says so: a trace that cannot be trimmed keeps all that was recorded."""
    trace = tmp_path / "run-17-ab-TP-0.trace.json.gz"
    unreadable = _batches("step[EXTEND bs=1 toks=4]", "ProfilerStep#" + "9" * 19)  # a step number past 18 digits
    trace.write_bytes(unreadable)
    (artifact,), notes = collect(_stock(tmp_path, "2:5"), lambda: [trace], stopped=True, producer="p")
    assert (artifact.path, artifact.steps) == (trace, None)
    assert notes[0].startswith(f"{trace.name}: its steps could not be counted (")
    assert notes[1] == f"{trace.name} could not be trimmed: it holds all that was recorded (at most steps 0:5)"
    assert trace.read_bytes() == unreadable
