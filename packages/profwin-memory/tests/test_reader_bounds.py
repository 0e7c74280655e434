"""profwin-memory's reader within bounds, and its CLI's errors (real files, real subprocesses)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from profwin_memory.reader import MAX_TIMELINE_BYTES, load_snapshot, load_timeline, summarize


def memory_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profwin_memory", *args], capture_output=True, text=True, timeout=300)


def test_a_gzip_bomb_stops_at_the_decompressed_limit(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.memory_timeline.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b'{"format": "')
        zeros = bytes(1 << 20)
        for _ in range(MAX_TIMELINE_BYTES // len(zeros) + 1):
            f.write(zeros)
    assert bomb.stat().st_size < MAX_TIMELINE_BYTES // 500
    with pytest.raises(ValueError, match=f"holds more than {MAX_TIMELINE_BYTES:,} bytes decompressed"):
        load_timeline(bomb)
    done = memory_cli("summarize", str(bomb))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "the limit for a memory timeline" in done.stderr


def test_damaged_gzip_is_a_clear_error(tmp_path: Path) -> None:
    damaged = tmp_path / "x.memory_timeline.json.gz"
    damaged.write_bytes(gzip.compress(b'{"format": "x"}' * 100)[:40])
    with pytest.raises(ValueError, match="is a damaged gzip file"):
        load_timeline(damaged)


@pytest.mark.parametrize("name", ["missing.memory_snapshot.pickle", "missing.memory_timeline.json.gz"])
def test_a_missing_file_says_no_such_file(tmp_path: Path, name: str) -> None:
    with pytest.raises(FileNotFoundError):
        (load_timeline if name.endswith(".gz") else load_snapshot)(tmp_path / name)
    done = memory_cli("summarize", str(tmp_path / name))
    assert (done.returncode, done.stderr) == (1, f"profwin-memory: cannot read {tmp_path / name}: no such file\n")
    done = memory_cli("summarize", str(tmp_path / name), "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == {"error": f"cannot read {tmp_path / name}: no such file", "path": str(tmp_path / name)}


def test_json_is_one_document_for_several_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.memory_timeline.json.gz", tmp_path / "b.memory_snapshot.pickle"
    done = memory_cli("summarize", str(a), str(b), "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == [
        {"error": f"cannot read {a}: no such file", "path": str(a)},
        {"error": f"cannot read {b}: no such file", "path": str(b)},
    ]


def test_cli_errors_are_one_line_or_json(tmp_path: Path) -> None:
    done = memory_cli("summarize")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    nested = tmp_path / "deep.memory_timeline.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    done = memory_cli("summarize", str(nested))
    assert (done.returncode, done.stderr) == (
        1,
        f"profwin-memory: cannot read {nested}: {nested} is nested too deeply to be a profwin memory timeline\n",
    )


def test_a_large_valid_timeline_is_summarized_streaming(tmp_path: Path) -> None:
    """40 MB of valid JSON events: summarizing keeps the per-event arrays out of memory (decoding
    them whole took about 6x the file's size), and the events are still counted."""
    import tracemalloc

    events = ",".join(f"[{i},{i % 7},{i * 64},{i * 128}]" for i in range(1_500_000))
    head = '{"format": "profwin.memory-timeline", "steps": "0:3", "totals": {"alloc_bytes": 5}, "top_ops": [], '
    path = tmp_path / "big.memory_timeline.json.gz"
    path.write_bytes(gzip.compress(f'{head}"ops": ["aten::mm"], "events": [{events}]}}'.encode(), compresslevel=1))
    tracemalloc.start()
    try:
        summary = summarize(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert summary["totals"] == {"alloc_bytes": 5}
    assert len(events) > 40_000_000
    assert peak < 16 << 20, peak
    assert load_timeline(path, events=False)["events"] == 1_500_000
