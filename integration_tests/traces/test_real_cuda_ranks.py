"""Many ranks and device time on REAL CUDA traces: two ranks recorded on one NVIDIA H200 (torch
2.11.0+cu130), each by a windowed ``profwin.Session`` (torch driver, window 1:6, ``ranks: all``),
gloo for the per-step all-reduce; rank 1 runs twice the batch, so it launches more device work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profwin_traces import merge_ranks, plot_ranks, plot_steps, summarize, summarize_ranks

FOLDER = Path(__file__).resolve().parent / "data" / "h200_two_ranks"


def test_two_real_cuda_ranks() -> None:
    ranks = summarize_ranks([FOLDER])
    assert [r.rank for r in ranks.ranks] == [0, 1]  # from the distributedInfo profwin's driver writes
    assert [r.steps for r in ranks.ranks] == [5, 5]
    assert [s.step for s in ranks.spread] == [1, 2, 3, 4, 5]
    assert all(s.ranks == 2 and s.max_us >= s.median_us >= s.min_us for s in ranks.spread)
    assert sum(r.slowest for r in ranks.ranks) == 5  # each step has exactly one straggler
    device = {rank_summary.trace.rank: rank_summary.device for rank_summary in ranks.summaries}
    assert device[0] is not None
    assert device[1] is not None
    assert device[1].work > device[0].work  # rank 1's larger batch: more kernels
    assert device[1].by_kind_us["compute"] > device[0].by_kind_us["compute"]
    for stat in device.values():
        assert stat is not None
        assert stat.launches == stat.work  # every kernel/copy matched to its launch call
        assert stat.busy_us + stat.idle_us == stat.span_us
    json.dumps(ranks.to_dict(), allow_nan=False)  # --json output stays strict JSON


def test_plots_show_device_time(tmp_path: Path) -> None:
    """Device busy/idle in the plots, not only in the text: a second panel under the step times
    (per step for one trace, per rank for a folder); a trace without device lanes has none."""
    image = pytest.importorskip("matplotlib.image")
    (rank1,) = FOLDER.glob("*rank1*")
    steps = plot_steps(summarize(rank1), tmp_path / "steps.png")
    ranks = plot_ranks(summarize_ranks([FOLDER]), tmp_path / "ranks.png")
    assert image.imread(steps).shape[0] == 7 * 150  # two panels: 7 in at 150 dpi (one panel: 4 in)
    assert image.imread(ranks).shape[0] > image.imread(ranks).shape[1] * 0.9  # the device panel under the map


def test_merge_ranks_is_summarize_ranks_in_two_halves() -> None:
    """What a caller summarizing files elsewhere (in parallel, on other machines) merges."""
    files = sorted(FOLDER.glob("*.pt.trace.json.gz"))
    assert merge_ranks([summarize(f) for f in files]).to_dict() == summarize_ranks([FOLDER]).to_dict()


def test_step_markers_count_each_step_once_on_a_cuda_trace() -> None:
    """Kineto copies every ``ProfilerStep#k`` onto the GPU's lanes (``gpu_user_annotation``): the
    demo's and the tests' marker count (``profwin.demo.count_step_markers``) lists each step once,
    as the trace tools do. On the H200 it listed [1, 1, 2, 2, ...]."""
    from profwin.demo import count_step_markers

    (rank0,) = FOLDER.glob("*rank0*")
    assert count_step_markers(rank0) == [1, 2, 3, 4, 5] == [s.number for s in summarize(rank0).steps]
