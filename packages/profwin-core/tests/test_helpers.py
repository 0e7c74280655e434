"""The small helpers plugins share: atomic_path and fan_out."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from profwin.plugin import atomic_path, fan_out


def test_atomic_path_renames_on_success_and_removes_on_error(tmp_path: Path) -> None:
    final = tmp_path / "out.json.gz"
    with atomic_path(final, suffix=".gz") as tmp:
        assert tmp.parent == tmp_path
        assert tmp.name.startswith(".out.json.gz.")
        assert tmp.name.endswith(".partial.gz")
        tmp.write_text("done")
    assert final.read_text() == "done"

    def interrupted_write() -> None:
        with atomic_path(tmp_path / "other.json") as tmp:
            tmp.write_text("half")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted_write()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json.gz"]


def test_fan_out_runs_concurrently_and_keeps_order() -> None:
    barrier = threading.Barrier(3, timeout=2)  # passes only if all three calls run at once

    def call(i: int) -> int:
        barrier.wait()
        return i * 10

    assert fan_out(call, [3, 1, 2]) == [30, 10, 20]
    assert fan_out(call, []) == []
    assert fan_out(lambda i: i + 1, [4]) == [5]
    with pytest.raises(threading.BrokenBarrierError):
        fan_out(call, [1, 2, 3], max_workers=2)  # two threads cannot meet a barrier of three
