"""The CPU memory timeline against real torch: which allocations land in the artifact."""

from __future__ import annotations

import gzip
import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import profwin  # noqa: E402
from profwin import ConfigError, ProfileSpec, Session, Window  # noqa: E402
from profwin.errors import WindowWarning  # noqa: E402
from profwin_memory import MemoryProfiler, load_timeline  # noqa: E402

pytestmark = pytest.mark.torch


def size_at(step: int) -> int:
    """A size no other allocation in these tests has: 3 MB plus a step-specific odd tail."""
    return 3_000_000 + 1_000 * step + 7


def spec(tmp_path: Path, window: str, **kw: Any) -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), output_dir=tmp_path / "out", activities=("cpu",), **kw)


def run(session: Session, steps: int, keep: list[Any]) -> None:
    with session as s:
        for k in range(steps):
            keep.append(torch.empty(size_at(k), dtype=torch.uint8))
            s.step()


def allocations(timeline: dict[str, Any]) -> dict[int, int]:
    """bytes -> step of every allocation (bytes > 0) in the timeline."""
    events = timeline["events"]
    return {b: step for b, step in zip(events["bytes"], events["step"], strict=True) if b > 0}


def test_allocations_inside_the_window_are_present_and_outside_absent(tmp_path: Path) -> None:
    keep: list[Any] = []
    session = Session(spec(tmp_path, "3:6"), profiler="memory")
    run(session, 10, keep)
    [artifact] = session.artifacts
    assert artifact.kind == "memory-timeline"
    assert artifact.steps == Window(3, 6)
    assert artifact.bytes == artifact.path.stat().st_size
    timeline = load_timeline(artifact.path)
    seen = allocations(timeline)
    assert {size_at(k): k for k in (3, 4, 5)} == seen  # step 2 is the warm-up step: not recorded
    assert timeline["per_step"]["step"] == [3, 4, 5]
    assert timeline["per_step"]["alloc_bytes"] == [size_at(k) for k in (3, 4, 5)]
    assert timeline["per_step"]["end_live_bytes"] == [size_at(3), size_at(3) + size_at(4), sum(map(size_at, (3, 4, 5)))]
    assert timeline["totals"]["peak_live_bytes"] == sum(map(size_at, (3, 4, 5)))
    assert timeline["totals"]["peak_step"] == 5
    assert timeline["top_ops"][0] == {"op": "aten::empty", "alloc_bytes": sum(map(size_at, (3, 4, 5))), "alloc_count": 3}


def test_frees_in_the_window_lower_the_live_bytes(tmp_path: Path) -> None:
    before = torch.empty(size_at(90), dtype=torch.uint8)  # allocated before the window
    with Session(spec(tmp_path, "1:3"), profiler="memory") as s:
        s.step()
        inside = torch.empty(size_at(91), dtype=torch.uint8)  # step 1
        s.step()
        del inside, before  # step 2: one free of a window block, one of an older block
        s.step()
    timeline = load_timeline(s.artifacts[0].path)
    assert timeline["per_step"]["alloc_bytes"] == [size_at(91), 0]
    # Only the window's own block comes back: the free of the older block is not the window's.
    assert timeline["per_step"]["free_bytes"] == [0, size_at(91)]
    assert timeline["per_step"]["peak_live_bytes"] == [size_at(91), size_at(91)]
    assert timeline["per_step"]["end_live_bytes"] == [size_at(91), 0]
    assert -size_at(91) in timeline["events"]["bytes"]
    assert -size_at(90) not in timeline["events"]["bytes"]


def test_early_close_writes_the_part_of_the_window_that_ran(tmp_path: Path) -> None:
    keep: list[Any] = []
    session = Session(spec(tmp_path, "3:8"), profiler="memory")

    def loop_that_stops_at_step_5() -> None:
        with session as s:
            for k in range(5):
                keep.append(torch.empty(size_at(k), dtype=torch.uint8))
                s.step()
            # After the last step() the loop is over; this allocation belongs to no step that ran.
            keep.append(torch.empty(size_at(50), dtype=torch.uint8))

    with pytest.warns(WindowWarning, match="inside window 3:8"):
        loop_that_stops_at_step_5()
    s = session
    [artifact] = s.artifacts
    assert artifact.steps == Window(3, 5)
    assert "_w3-5." in artifact.path.name
    timeline = load_timeline(artifact.path)
    assert allocations(timeline) == {size_at(3): 3, size_at(4): 4}
    assert timeline["per_step"]["step"] == [3, 4]
    assert timeline["totals"]["outside_steps"] == 1


def test_a_step_that_raises_is_kept(tmp_path: Path) -> None:
    keep: list[Any] = []
    session = Session(spec(tmp_path, "2:8"), profiler="memory")

    def loop_that_fails_in_step_3() -> None:
        with session as s:
            for k in range(8):
                keep.append(torch.empty(size_at(k), dtype=torch.uint8))
                if k == 3:
                    raise RuntimeError("boom")
                s.step()

    with pytest.warns(WindowWarning, match="inside window 2:8"), pytest.raises(RuntimeError, match="boom"):
        loop_that_fails_in_step_3()
    s = session
    [artifact] = s.artifacts
    assert artifact.steps == Window(2, 4)
    assert allocations(load_timeline(artifact.path)) == {size_at(2): 2, size_at(3): 3}


def test_window_never_reached_writes_nothing(tmp_path: Path) -> None:
    keep: list[Any] = []
    session = Session(spec(tmp_path, "5:8"), profiler="memory")
    with pytest.warns(WindowWarning, match="never reached"):
        # The driver opens for warm-up at step 4 and starts recording when step 5 begins, which
        # is when the session closes: no step of the window ran.
        run(session, 5, keep)
    assert session.artifacts == []
    assert not [p for p in (tmp_path / "out").iterdir() if not p.name.startswith(".profwin-write-check")]


def test_window_from_step_zero_and_unbounded_end(tmp_path: Path) -> None:
    keep: list[Any] = []
    first = Session(spec(tmp_path, "0:2"), profiler="memory")
    run(first, 4, keep)
    assert allocations(load_timeline(first.artifacts[0].path)) == {size_at(0): 0, size_at(1): 1}
    keep.clear()
    second = Session(spec(tmp_path, "2:"), profiler="memory")
    run(second, 5, keep)
    [artifact] = second.artifacts
    assert artifact.steps == Window(2, 5)
    assert allocations(load_timeline(artifact.path)) == {size_at(k): k for k in (2, 3, 4)}


def test_only_selected_ranks_write(tmp_path: Path) -> None:
    keep: list[Any] = []
    skipped = Session(spec(tmp_path, "1:3", ranks=(1, 3)), profiler="memory", rank=0)
    run(skipped, 4, keep)
    assert skipped.artifacts == []
    chosen = Session(spec(tmp_path, "1:3", ranks=(1, 3), prefix="rollout"), profiler="memory", rank=3)
    run(chosen, 4, keep)
    [artifact] = chosen.artifacts
    assert artifact.rank == 3
    assert artifact.path.name.startswith(f"rollout_rank3_pid{os.getpid()}_w1-3.")
    assert artifact.path.name.endswith(".memory_timeline.json")
    assert load_timeline(artifact.path)["rank"] == 3
    assert not list(artifact.path.parent.glob(".*.partial"))


def test_steps_format_and_gzip(tmp_path: Path) -> None:
    keep: list[Any] = []
    options = {"memory": {"format": "json.gz", "timeline": "steps", "top_ops": 1}}
    session = Session(spec(tmp_path, "1:3", options=options), profiler="memory")
    with session as s:
        for k in range(3):
            keep.append(torch.empty(size_at(k), dtype=torch.uint8))
            keep.append(torch.zeros(size_at(k + 10), dtype=torch.uint8))
            s.step()
    path = session.artifacts[0].path
    assert path.name.endswith(".memory_timeline.json.gz")
    timeline = json.loads(gzip.decompress(path.read_bytes()))
    assert "events" not in timeline
    assert timeline["per_step"]["alloc_bytes"] == [size_at(1) + size_at(11), size_at(2) + size_at(12)]
    assert len(timeline["top_ops"]) == 1
    assert timeline["top_ops"][0]["op"] == "aten::zeros"  # the op the code called, not its aten::empty


def test_two_sessions_in_one_process_each_hold_their_own_window(tmp_path: Path) -> None:
    keep: list[Any] = []
    first = Session(spec(tmp_path, "1:2"), profiler="memory")
    run(first, 2, keep)
    second = Session(spec(tmp_path, "1:2"), profiler="memory")
    with second as s:
        s.step()
        keep.append(torch.empty(size_at(70), dtype=torch.uint8))
        s.step()
    assert allocations(load_timeline(first.artifacts[0].path)) == {size_at(1): 1}
    assert allocations(load_timeline(second.artifacts[0].path)) == {size_at(70): 1}
    assert first.artifacts[0].path != second.artifacts[0].path


def test_plugin_is_discovered() -> None:
    [info] = [p for p in profwin.plugins() if p.name == "memory"]
    assert (info.group, info.status, info.distribution) == ("profwin.profilers", "ok", "profwin-memory")
    assert isinstance(profwin.profiler("memory"), MemoryProfiler)


def test_check_picks_the_machines_device_and_validates_options(tmp_path: Path) -> None:
    profiler = MemoryProfiler()
    device = "cuda" if torch.cuda.is_available() else "cpu"  # an H200 ran the first, this machine the second
    assert profiler.check(ProfileSpec(output_dir=tmp_path)).activities == (device,)
    with pytest.raises(ConfigError, match=r"options\.memory\.max_entries"):
        profiler.check(ProfileSpec(output_dir=tmp_path, options={"memory": {"max_entries": 0}}))


def test_unavailable_or_foreign_devices(tmp_path: Path) -> None:
    """``cuda`` where the machine has none is an error or dropped; where it has one, ``cuda`` is
    taken and ``cpu`` beside it is refused (one device per session). An NPU is never this
    profiler's."""
    profiler = MemoryProfiler()
    if torch.cuda.is_available():
        assert profiler.check(ProfileSpec(output_dir=tmp_path, activities=("cuda",))).activities == ("cuda",)
        with pytest.raises(ConfigError, match="one device per session"):
            profiler.check(ProfileSpec(output_dir=tmp_path, activities=("cpu", "cuda"), on_unavailable="drop"))
    else:
        with pytest.raises(ConfigError, match=r"torch.cuda.is_available\(\) == False"):
            profiler.check(ProfileSpec(output_dir=tmp_path, activities=("cuda",)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dropped = profiler.check(ProfileSpec(output_dir=tmp_path, activities=("cpu", "cuda"), on_unavailable="drop"))
        assert dropped.activities == ("cpu",)
        assert any("dropping activity 'cuda'" in str(w.message) for w in caught)
    with pytest.raises(ConfigError, match="profwin-npu"):
        profiler.check(ProfileSpec(output_dir=tmp_path, activities=("npu",)))


def test_cli_summarizes_a_timeline(tmp_path: Path) -> None:
    import subprocess
    import sys

    keep: list[Any] = []
    session = Session(spec(tmp_path, "1:3"), profiler="memory")
    run(session, 3, keep)
    path = session.artifacts[0].path
    done = subprocess.run(
        [sys.executable, "-m", "profwin_memory", "summarize", "--json", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["steps"] == "1:3"
    assert summary["totals"]["alloc_bytes"] == size_at(1) + size_at(2)


def test_a_stale_size_for_an_older_block_is_not_counted(tmp_path: Path) -> None:
    """torch's CPU allocator keeps the size of a block allocated while profiling and freed after it;
    a later block at the same address is then freed inside a window with that stale size. Such a
    free is not the window's: it is counted apart, never in the window's bytes."""
    size = 50_007  # a heap block (below malloc's mmap threshold), so its address is often handed out again
    # The profiler's own threads allocate too, and a long-lived test worker has a busier heap:
    # retry until the address comes back.
    for attempt in range(150):
        with Session(spec(tmp_path / f"first{attempt}", "0:1"), profiler="memory") as s:
            profiled = torch.empty(size, dtype=torch.uint8)  # its size enters torch's table
            s.step()
        address = profiled.data_ptr()
        del profiled  # freed with profiling off: the table keeps the entry
        older = torch.empty(size, dtype=torch.uint8)  # made before the second window
        if older.data_ptr() == address:
            break
    assert older.data_ptr() == address, "the allocator never reused the address: the case is not set up"
    with Session(spec(tmp_path / "second", "0:1"), profiler="memory") as s:
        del older  # reported as a free of size_at(70), the stale size
        s.step()
    timeline = load_timeline(s.artifacts[0].path)
    assert timeline["per_step"]["free_bytes"] == [0]
    assert timeline["per_step"]["end_live_bytes"] == [0]
    assert timeline["totals"]["frees_of_older_blocks"] == 1
