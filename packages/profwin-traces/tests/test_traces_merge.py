"""``profwin merge`` of the traces of rank 0 and rank 1 (``RANK``), each written by a real
profwin.Session with the torch driver on CPU, each step annotated with what it held: both readers
give the same merged trace, and it reads back with its steps and annotations. The real engine and GPU traces
are merged in integration_tests/traces/test_merge.py."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from profwin.cli import main
from profwin_traces import StepTokens, merge, summarize

pytestmark = pytest.mark.torch

_RANKS_RUN = """
import os, sys, torch, profwin
from profwin_traces import StepTokens
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))
for rank in (0, 1):
    os.environ["RANK"] = str(rank)
    spec = profwin.ProfileSpec(window=profwin.Window(1, 5), output_dir=sys.argv[1], ranks="all")
    with torch.inference_mode(), profwin.Session(spec) as session:
        for k in range(6):
            with torch.profiler.record_function(StepTokens.of(k, [k, k + 1], (1, 5), 0, 0).span_name()):
                for _ in range(2 + rank):
                    model(torch.randn(4, 32))
            session.step()
"""


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rank 0's and rank 1's traces, one after the other in one process (one torch import)."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("ranks")
    env = {**os.environ, "WORLD_SIZE": "2", "KINETO_LOG_LEVEL": "6"}
    subprocess.run([sys.executable, "-c", _RANKS_RUN, str(out)], env=env, check=True, timeout=300)
    assert len(list(out.glob("*rank[01]*.json.gz"))) == 2
    return out


def _events(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return list(json.load(f)["traceEvents"])


def test_both_readers_merge_alike(rank_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from profwin_traces.columnar import column_decoder
    from profwin_traces.reader import fast_decoder, numpy_or_none

    found = []
    for fast in ("1", "0"):
        monkeypatch.setenv("PROFWIN_TRACES_FAST", fast)
        for cached in (numpy_or_none, column_decoder, fast_decoder):
            cached.cache_clear()
        out = tmp_path / f"merged-{fast}.pt.trace.json.gz"
        result = merge([rank_dir], out)
        found.append((result.to_dict() | {"path": None, "bytes": None}, _events(out)))
    monkeypatch.undo()
    for cached in (numpy_or_none, column_decoder, fast_decoder):
        cached.cache_clear()
    assert found[0] == found[1]


def test_the_merged_trace_reads_back_with_what_each_step_held(rank_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "merged.pt.trace.json.gz"
    result = merge([rank_dir], out, window="2:4")
    assert [(t.pid, t.rank, t.steps) for t in result.traces] == [(1, 0, "2:4"), (2, 1, "2:4")]
    summary = summarize(out)
    assert [s.number for s in summary.steps] == [2, 3]
    # Both ranks annotated step k alike: one annotation, no conflict.
    assert [s.tokens for s in summary.steps] == [StepTokens.of(k, [k, k + 1], (1, 5), 0, 0) for k in (2, 3)]
    assert not [n for n in summary.notes if "profwin.tokens" in n]
    assert {t.pid for t in summary.threads} == {1, 2}
    assert summary.trace.rank is None  # a merged trace is no one rank's
    assert summary.trace.provenance is not None
    assert summary.trace.provenance["steps"] == "2:4"


def test_cli_merge_json(rank_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.pt.trace.json"
    assert main(["merge", str(rank_dir), "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["path"] == str(out)
    assert data["aligned_step"] == 1
    assert [t["label"].split(":")[0] for t in data["traces"]] == ["rank 0", "rank 1"]
    assert data["events"] == len(json.loads(out.read_text())["traceEvents"])  # not gzip: its name says .json


def test_a_long_windows_parts_are_merged_as_one_trace_per_rank(tmp_path: Path) -> None:
    """Parts of one window (profwin.parts) are read as one, as every trace tool reads them: one
    process per rank, every step of the window in it, named by its parts."""
    import torch

    import profwin

    for rank in (0, 1):
        spec = profwin.ProfileSpec(window=profwin.Window(0, 12), output_dir=tmp_path / "parts", ranks="all", part_steps=4)
        with profwin.Session(spec, rank=rank) as session:
            for _ in range(14):
                torch.randn(16, 16).matmul(torch.randn(16, 16))
                session.step()
    assert len(list((tmp_path / "parts").glob("*_part*"))) == 6
    result = merge([tmp_path / "parts"], tmp_path / "all.json.gz")
    assert [(t.rank, t.steps) for t in result.traces] == [(0, "0:12"), (1, "0:12")]
    assert all("and 2 more part(s) of its window" in t.label for t in result.traces)
    assert not list(tmp_path.glob(".profwin-merge-*"))  # the joined parts were scratch files
    merged = summarize(tmp_path / "all.json.gz")
    assert [s.number for s in merged.steps] == list(range(12))
    (note,) = [n for n in merged.notes if "merges 2 traces" in n]
    assert "a step spans all of them" in note
    alone = summarize(result.traces[0].path)  # one part alone: no such note
    assert not any("merges" in n for n in alone.notes)
