"""``profwin merge`` on real traces: two ranks recorded on an NVIDIA H200 (kernels, launches,
flows, memcpy), and the CPU traces vLLM 0.32.0 and SGLang 0.5.23 wrote serving a tiny Llama
(the files in data/). Each merged trace is held to Perfetto's rules (perfetto_rules.py), opened
back by profwin's own reader, and compared event by event with its inputs, read with json."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest

from profwin.cli import main
from profwin.errors import ConfigError
from profwin_traces import TraceError, merge, summarize, summarize_ranks, trim

from .perfetto_rules import by_process, check_perfetto_trace, load, names

DATA = Path(__file__).resolve().parent / "data"
RANKS = DATA / "h200_two_ranks"
VLLM = DATA / "vllm_0.32.0_cpu_rank0.pt.trace.json.gz"
SGLANG = DATA / "sglang_0.5.23_cpu-TP-0.trace.json.gz"


def _events(path: Path) -> list[dict[str, Any]]:
    return [e for e in load(path)["traceEvents"] if e.get("ph") != "M"]


def _first(events: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return min((e for e in events if e.get("name") == name and e.get("cat") != "gpu_user_annotation"), key=lambda e: e["ts"])


def test_two_cuda_ranks_become_two_aligned_processes(tmp_path: Path) -> None:
    out = tmp_path / "ranks.pt.trace.json.gz"
    result = merge([RANKS], out)
    merged = check_perfetto_trace(out)
    inputs = sorted(RANKS.glob("*.json.gz"))
    assert [(t.pid, t.rank, t.path) for t in result.traces] == [(1, 0, str(inputs[0])), (2, 1, str(inputs[1]))]
    assert result.aligned_step == 1
    processes = by_process(merged)
    assert sorted(processes) == [1, 2]
    for trace, source in zip(result.traces, inputs, strict=True):
        before, after = _events(source), processes[trace.pid]
        # Every event, in file order, its names kept, its time moved by the input's one shift.
        assert names(after) == names(before)
        assert [e.get("name") for e in after] == [e.get("name") for e in before]
        assert all(math.isclose(a["ts"] - b["ts"], trace.shift_us, abs_tol=2e-3) for a, b in zip(after, before, strict=True))
        # Launches pair with their own rank's kernels only: correlation ids apart per rank.
        launched = {e["args"]["correlation"] for e in after if e.get("cat") == "cuda_runtime" and "correlation" in e["args"]}
        worked = {e["args"]["correlation"] for e in after if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
        assert worked <= launched
    # The window's first step (ProfilerStep#1) starts at one instant on both ranks.
    starts = [_first(processes[pid], "ProfilerStep#1")["ts"] for pid in (1, 2)]
    assert starts[0] == pytest.approx(starts[1], abs=2e-3)
    assert result.traces[0].shift_us == 0.0  # the first input keeps its own times
    # Threads: the host thread and the GPU stream of each rank, named after what they were.
    thread_names = {(e["pid"], e["args"]["name"]) for e in merged["traceEvents"] if e.get("name") == "thread_name"}
    assert (1, "GPU 0 / stream 7") in thread_names
    assert (2, "CPU / thread 483 (python3)") in thread_names or any(
        pid == 2 and name.startswith("CPU / thread") for pid, name in thread_names
    )
    process_names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"}
    assert process_names == {1: f"rank 0: {inputs[0].name}", 2: f"rank 1: {inputs[1].name}"}
    # profwin reads it back: the steps of both ranks, device time of both.
    summary = summarize(out)
    assert [s.number for s in summary.steps] == [1, 2, 3, 4, 5]
    assert summary.device is not None
    ranks = summarize_ranks([RANKS])
    assert summary.device.work == sum(s.device.work for s in ranks.summaries if s.device is not None)
    assert summary.device.launches == summary.device.work  # every kernel matched to its own rank's launch
    assert merged["profwin"]["merged"] == [str(p) for p in inputs]
    assert "distributedInfo" not in merged  # one rank's fact, not the merged trace's


def test_a_window_keeps_what_trim_keeps_of_each_rank(tmp_path: Path) -> None:
    out = tmp_path / "w.pt.trace.json.gz"
    result = merge([RANKS], out, window="2:4")
    processes = by_process(check_perfetto_trace(out))
    assert result.aligned_step == 2
    for trace in result.traces:
        trimmed = tmp_path / f"trim-{trace.pid}.json"
        trim(trace.path, "2:4", trimmed)
        expected = _events(trimmed)
        assert names(processes[trace.pid]) == names(expected)
        assert sorted(round(e["ts"] - trace.shift_us, 2) for e in processes[trace.pid]) == sorted(
            round(e["ts"], 2) for e in expected
        )
    assert [s.number for s in summarize(out).steps] == [2, 3]


def test_engines_of_two_kinds_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A vLLM and an SGLang trace (both rank 0, the tiny Llama on CPU): two processes, each with
    its own engine's step markers, their step 0 at one instant."""
    out = tmp_path / "engines.pt.trace.json.gz"
    assert main(["merge", str(VLLM), str(SGLANG), "-o", str(out)]) == 0
    text = capsys.readouterr()
    assert f"{out}: 2 traces, one process each, aligned on step 0" in text.out
    assert "note: the traces were numbered by different markers: ['sglang', 'vllm']" in text.err
    assert f"view: open {out} in https://ui.perfetto.dev" in text.out
    processes = by_process(check_perfetto_trace(out))
    vllm_pid, sglang_pid = (2, 1)  # ordered by rank (both 0), then path
    for pid, source in ((vllm_pid, VLLM), (sglang_pid, SGLANG)):
        assert names(processes[pid]) == names(_events(source))
    first_vllm = _first(processes[vllm_pid], "execute_context_0(0)_generation_8(8)")
    first_sglang = _first(processes[sglang_pid], "step[EXTEND bs=1 toks=5]")
    assert first_vllm["ts"] == pytest.approx(first_sglang["ts"], abs=2e-3)
    # profwin reads it back; its markers by preference (vLLM's first), or SGLang's when asked.
    assert summarize(out).producer == "vllm"
    assert [s.number for s in summarize(out).steps] == [0, 1]


def test_a_collect_folder_merges_and_summarizes(tmp_path: Path) -> None:
    """``profwin collect`` lays the nodes' files out as DIR/<node>/<file>, next to its manifest."""
    collected = tmp_path / "collected"
    for node, source in zip(("10.0.0.5", "10.0.0.6"), sorted(RANKS.glob("*.json.gz")), strict=True):
        (collected / node).mkdir(parents=True)
        shutil.copy(source, collected / node / source.name)
    (collected / ".profwin-collect.json").write_text("{}")
    result = merge([collected], tmp_path / "m.pt.trace.json.gz")
    assert [t.rank for t in result.traces] == [0, 1]
    assert [r.rank for r in summarize_ranks([collected]).ranks] == [0, 1]


def test_errors_name_the_file_and_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rank0, rank1 = sorted(RANKS.glob("*.json.gz"))
    early, late = tmp_path / "early.pt.trace.json", tmp_path / "late.pt.trace.json"
    trim(rank0, "1:3", early)
    trim(rank1, "4:6", late)
    with pytest.raises(TraceError, match=r"the traces share no step number, so they cannot be lined up on one "
                       r"\(early.pt.trace.json: steps 1..2; late.pt.trace.json: steps 4..5\)"):  # fmt: skip
        merge([early, late], tmp_path / "x.json.gz")
    with pytest.raises(TraceError, match=r"share no step number in window 3:4"):
        merge([rank0, early], tmp_path / "x.json.gz", window="3:4")
    with pytest.raises(ConfigError, match="the output must not be one of the input traces"):
        merge([rank0, early], early)
    with pytest.raises(ConfigError, match="does not exist"):
        merge([rank0], tmp_path / "no" / "x.json.gz")
    plain = tmp_path / "plain.json"
    plain.write_text('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1.0, "dur": 1.0}]}')
    with pytest.raises(TraceError, match="no trace with step markers"):
        merge([plain], tmp_path / "x.json.gz")
    result = merge([plain, rank0], tmp_path / "one.json.gz")
    assert result.notes == ("plain.json: no step markers; left out",)
    assert not list(tmp_path.glob(".*partial*")), "nothing half-written is left"
    assert main(["merge", str(early), str(late), "-o", str(tmp_path / "x.json.gz")]) == 2
    assert capsys.readouterr().err.startswith(f"profwin: error: {early}, {late}: the traces share no step number")
