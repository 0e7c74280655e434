"""Many ranks, diff and plots on traces from two real processes (RANK=0 and RANK=1), each
running a profwin.Session with the torch driver on a tiny model on CPU.

Rank 1 does twice the work per step (it is usually the straggler, but nothing asserts timing);
the expected step times are read from the files with json.load, independently of the
streaming reader.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from profwin.cli import main
from profwin_traces import TraceError, diff, render_diff, render_ranks, summarize_ranks

pytestmark = pytest.mark.torch

_RANK_RUN = """
import sys, torch, profwin
rank_work = 1 + int(sys.argv[2])
spec = profwin.ProfileSpec(window=profwin.Window(1, 5), output_dir=sys.argv[1], ranks="all")
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64))
with torch.inference_mode(), profwin.Session(spec) as session:
    for _ in range(6):
        for _ in range(4 * rank_work):
            model(torch.randn(8, 64))
        session.step()
"""


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("ranks")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RANK_RUN, str(out), str(rank)],
            env={**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "KINETO_LOG_LEVEL": "6"},
        )
        for rank in (0, 1)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    assert len(list(out.iterdir())) == 2
    return out


def load(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


def step_times(trace: dict[str, Any]) -> dict[int, float]:
    found = {}
    for e in trace["traceEvents"]:
        m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name")))
        if m and e.get("ph") == "X":
            found[int(m.group(1))] = round(e["dur"], 3)
    return found


def test_traces_carry_distributed_info(rank_dir: Path) -> None:
    infos = sorted(load(p)["distributedInfo"]["rank"] for p in rank_dir.iterdir())
    assert infos == [0, 1]
    assert {load(p)["distributedInfo"]["world_size"] for p in rank_dir.iterdir()} == {2}


def test_summarize_a_folder_of_ranks(rank_dir: Path) -> None:
    expected = {load(p)["distributedInfo"]["rank"]: step_times(load(p)) for p in rank_dir.iterdir()}
    ranks = summarize_ranks([rank_dir])
    assert [r.rank for r in ranks.ranks] == [0, 1]
    assert {(row.rank, row.step): row.dur_us for row in ranks.rows} == {
        (rank, step): dur for rank, times in expected.items() for step, dur in times.items()
    }
    for sp in ranks.spread:
        durs = {rank: expected[rank][sp.step] for rank in expected}
        assert sp.slowest_rank == max(durs, key=lambda r: durs[r])
        assert sp.spread_us == pytest.approx(max(durs.values()) - min(durs.values()), abs=1e-3)
    # Straggler counts and medians follow from the recorded times (not asserted from timing:
    # the machine is shared, so which rank is slower is the trace's to say).
    slowest = [max(expected, key=lambda r: (expected[r][step], -r)) for step in sorted(expected[0])]
    assert [r.slowest for r in ranks.ranks] == [slowest.count(0), slowest.count(1)]
    assert [r.median_us for r in ranks.ranks] == [
        pytest.approx(statistics.median(expected[r].values()), abs=1e-3) for r in (0, 1)
    ]
    text = render_ranks(ranks)
    assert "slowest" in text
    assert "rank" in text


def test_two_traces_of_one_rank_are_an_error(rank_dir: Path, tmp_path: Path) -> None:
    first = sorted(rank_dir.iterdir())[0]
    shutil.copy(first, tmp_path / first.name)
    shutil.copy(first, tmp_path / ("copy-" + first.name))
    with pytest.raises(TraceError, match="one trace per rank"):
        summarize_ranks([tmp_path])


def test_diff_of_the_two_ranks(rank_dir: Path) -> None:
    zero, one = sorted(rank_dir.iterdir(), key=lambda p: load(p)["distributedInfo"]["rank"])
    d = diff(zero, one)
    a, b = step_times(load(zero)), step_times(load(one))
    assert [s.step for s in d.steps] == sorted(a)
    assert all(s.change_us == pytest.approx(b[s.step] - a[s.step], abs=2e-3) for s in d.steps)
    mean = lambda times: sum(times.values()) / len(times)  # noqa: E731
    assert d.change_us == pytest.approx(mean(b) - mean(a), abs=2e-3)
    # Two linear layers per forward, 4 forwards per step on rank 0 and 8 on rank 1 (wall times on
    # a shared machine are noisy; the call counts are exact).
    (addmm,) = [o for o in d.ops if o.name == "aten::addmm"]
    assert (addmm.a_calls, addmm.b_calls) == (8, 16)
    assert "largest change first" in render_diff(d)
    same = diff(rank_dir, rank_dir)
    assert same.change_us == 0
    assert all(o.change_us == 0 for o in same.ops)


def test_cli_many_ranks_json_and_plots(rank_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    heat, bars = tmp_path / "ranks.png", tmp_path / "diff.png"
    assert main(["summarize", str(rank_dir), "--json", "--plot", str(heat)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in data["ranks"]] == [0, 1]
    assert heat.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    zero, one = sorted(rank_dir.iterdir())
    assert main(["diff", str(zero), str(one), "--json", "--plot", str(bars)]) == 0
    assert json.loads(capsys.readouterr().out)["a_steps"] == 4
    assert bars.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_rejects_a_negative_top(rank_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summarize", str(rank_dir), "--top", "-1"]) == 2
    assert "argument --top: must be an integer >= 0 (got '-1')" in capsys.readouterr().err
