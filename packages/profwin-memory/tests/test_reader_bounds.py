"""profwin-memory's reader within bounds, and its CLI's errors (real files, real subprocesses)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from profwin_memory.reader import load_snapshot, load_timeline


def memory_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profwin_memory", *args], capture_output=True, text=True, timeout=300)


def test_damaged_gzip_is_a_clear_error(tmp_path: Path) -> None:
    damaged = tmp_path / "x.memory_timeline.json.gz"
    damaged.write_bytes(gzip.compress(b'{"format": "x"}' * 100)[:40])
    with pytest.raises(ValueError, match="the gzip stream is truncated"):
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
    nested.write_text('{"units": ' + "[" * 100_000 + "]" * 100_000 + "}")
    done = memory_cli("summarize", str(nested))
    assert done.returncode == 1
    assert done.stderr == (
        f"profwin-memory: cannot read {nested}: units at character 10 is nested too deeply "
        "(about 1,000 levels, Python's recursion limit)\n"
    )


def test_a_large_valid_timeline_is_summarized_streaming(tmp_path: Path, in_child: Callable[..., tuple[list[str], int]]) -> None:
    """40 MB of valid events: summarizing keeps the columns out of memory (decoding them whole took
    about 6x the file's size) and still counts and checks them (peak RSS of a fresh interpreter)."""
    n = 1_500_000
    columns = {
        "t_us": [i * 0.5 for i in range(n)],
        "step": [3] * n,
        "bytes": [4096, -4096] * (n // 2),
        "live_bytes": [4096, 0] * (n // 2),
        "op": [0] * n,
    }
    totals = dict.fromkeys(("alloc_bytes", "alloc_count", "free_bytes", "free_count", "end_live_bytes"), 0)
    totals |= {"peak_live_bytes": 4096, "peak_step": 3, "outside_steps": 0, "frees_of_older_blocks": 0}
    per_step = {key: [3] for key in ("step", "alloc_bytes", "alloc_count", "free_bytes", "free_count", "peak_live_bytes")}
    body = {
        "format": "profwin.memory-timeline", "version": 1, "steps": "3:4", "totals": totals,
        "per_step": per_step | {"end_live_bytes": [0]}, "top_ops": [], "ops": ["aten::mm"], "events": columns,
    }  # fmt: skip
    path = tmp_path / "big.memory_timeline.json.gz"
    text = json.dumps(body).encode()
    assert len(text) > 40_000_000
    path.write_bytes(gzip.compress(text, compresslevel=1))
    del body, columns, text
    (summary,), peak_kib = in_child(
        "import json, sys\nfrom profwin_memory import summarize\nprint(json.dumps(summarize(sys.argv[1])))", str(path)
    )
    assert json.loads(summary)["events"] == n
    assert json.loads(summary)["totals"]["peak_live_bytes"] == 4096
    assert peak_kib < 100 << 10, peak_kib
