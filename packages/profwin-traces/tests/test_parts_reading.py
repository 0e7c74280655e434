"""A long window's part traces (core's profwin.parts writes them) read as one trace by every tool:
summarize, summarize_ranks, trim, diff and the commands, on real torch (CPU)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, Session, Window
from profwin.cli import main
from profwin.demo import count_step_markers
from profwin.provenance import PROVENANCE_KEY
from profwin_traces import TraceError, diff, summarize, summarize_ranks, trim, window_parts

torch = pytest.importorskip(
    "torch", reason="the parts are written by the torch driver (scripts/bootstrap.sh installs a CPU build)"
)


def header(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return dict(json.load(f)[PROVENANCE_KEY])


def count_events(path: Path) -> int:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return len(json.load(f)["traceEvents"])


# -- the trace tools read a window's parts as one ----------------------------------------------


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    """Window 0:12 in parts of 5 steps: 0:5, 5:10, 10:12, by profwin's torch driver on CPU."""
    spec = ProfileSpec(window=Window.parse("0:12"), output_dir=tmp_path, part_steps=5)
    with Session(spec, profiler="torch") as session:
        for _ in range(12):
            torch.ones(2).sum()
            session.step()
    assert [a.steps for a in session.artifacts] == [Window(0, 5), Window(5, 10), Window(10, 12)]
    return [a.path for a in session.artifacts]


def test_summarize_reads_the_parts_as_one_trace(parts: list[Path]) -> None:
    assert window_parts([parts[0].parent]) == [tuple(parts)]
    summary = summarize(parts)
    assert [st.number for st in summary.steps] == list(range(12))
    assert summary.trace.parts == tuple(str(p) for p in parts)
    assert summary.trace.events == sum(count_events(p) for p in parts)
    assert summarize(parts, window="3:8").selected == "3:8"  # across the boundary at 5
    ranks = summarize_ranks([parts[0].parent])
    (rank,) = ranks.ranks
    assert rank.steps == 12


def test_one_part_alone_says_it_is_one(parts: list[Path]) -> None:
    summary = summarize(parts[1])
    assert [st.number for st in summary.steps] == list(range(5, 10))
    assert any("this is part 2 of window 0:12; give all its parts" in note for note in summary.notes)


def test_trim_cuts_a_window_across_parts_into_one_trace(parts: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "cut" / "steps3-8.json.gz"
    out.parent.mkdir()
    result = trim(parts[0].parent, "3:8", out)
    assert result.steps == "3:8"
    assert count_step_markers(out) == list(range(3, 8))
    assert header(out)["source_parts"] == [p.name for p in parts]
    assert "part" not in header(out)


def test_diff_of_a_folder_of_parts(parts: list[Path]) -> None:
    result = diff(parts[0].parent, parts[0].parent)
    assert result.a_steps == result.b_steps == 12
    assert result.unchanged


def test_cli_summarize_and_trim_take_the_parts(parts: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summarize", str(parts[0].parent)]) == 0
    out = capsys.readouterr().out
    assert "3 parts of one window" in out
    assert "12 torch steps (0..11)" in out
    cut = tmp_path / "cut.json"
    assert main(["trim", *map(str, parts[1:]), "--window", "6:11", "-o", str(cut)]) == 0
    assert count_step_markers(cut) == list(range(6, 11))


def test_a_part_left_out_or_given_twice_is_an_error(parts: list[Path], tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"given as parts 1, 3: 1 part\(s\) missing between them \(2\)"):
        window_parts([parts[0], parts[2]])
    copy = tmp_path / ("copy-" + parts[1].name)
    copy.write_bytes(parts[1].read_bytes())
    with pytest.raises(TraceError, match=r"part 2 of window 0:12 .* is also"):
        window_parts([tmp_path])
    # Read in one pass without the check of names: the steps themselves are counted.
    with pytest.raises(TraceError, match=r"step 5 is in two of the parts given \(5 step\(s\) twice\)"):
        summarize([parts[0], parts[1], copy])
    with pytest.raises(TraceError, match=r"hold steps 0..11 but not 5..9 \(5 step\(s\)\): a part left out"):
        summarize([parts[0], parts[2]])
