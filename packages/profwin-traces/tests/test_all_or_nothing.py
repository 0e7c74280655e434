"""The trace commands that write a result leave all of it or none (issue 41, class 3): a SIGTERM that
lands after ``profwin merge`` put its output in place, while it still reports, leaves no output
(and the file it replaced as it was); and the trace tools hold event names in bounded memory
however many and long they are (262,000 ``profwin.tokens`` annotations of 1 KiB took
``summarize`` to 594 MB). Real subprocesses; each signal lands while the child is held on a FIFO
the test controls, never on a bet about how fast it runs."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from profwin.cli_runner import EXIT_TERMINATED

HOLD_AFTER = """
import importlib

merge = importlib.import_module("profwin_traces.merge")  # the module (profwin_traces.merge is also its function)
_result = merge.MergeResult


def held_result(*args, **kwargs):
    hold()  # the output is in place; held until the test closes the FIFO
    return _result(*args, **kwargs)


merge.MergeResult = held_result
"""


def trace(path: Path, rank: int) -> Path:
    events = [
        {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1, "ts": 100.0 * s, "dur": 90.0}
        for s in range(4)
    ]
    events += [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100.0 * s + 5, "dur": 50.0} for s in range(4)
    ]
    path.write_text(json.dumps({"distributedInfo": {"rank": rank}, "traceEvents": events}))
    return path


@pytest.mark.parametrize("existing", [False, True])
def test_sigterm_after_merge_put_its_output_in_place_leaves_none(
    tmp_path: Path, existing: bool, held_child: Callable[[str], Any]
) -> None:
    child = held_child(HOLD_AFTER)
    inputs = tmp_path / "in"
    inputs.mkdir()
    a, b = trace(inputs / "rank0.json", 0), trace(inputs / "rank1.json", 1)
    out = tmp_path / "out" / "merged.json"
    out.parent.mkdir()
    if existing:
        out.write_text("the user's previous merge")
    proc = child.start("merge", str(a), str(b), "-o", str(out))
    writer = child.wait_held(proc)
    try:
        assert json.loads(out.read_text())["traceEvents"]  # held after the rename: the output is complete, in place
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        os.close(writer)
    assert proc.returncode == EXIT_TERMINATED, stderr
    assert stderr.strip() == "profwin: terminated"
    if existing:
        assert [p.name for p in out.parent.iterdir()] == ["merged.json"]
        assert out.read_text() == "the user's previous merge"
    else:
        assert list(out.parent.iterdir()) == []


def annotated(path: Path, count: int, name_chars: int) -> Path:
    """One step holding ``count`` ``profwin.tokens`` spans, each with a name of ``name_chars``."""
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"traceEvents": [\n')
        f.write(
            json.dumps(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": "ProfilerStep#0",
                    "pid": 1,
                    "tid": 1,
                    "ts": 0,
                    "dur": 10.0 * count + 100,
                }
            )
        )
        pad = "y" * (name_chars - 23)
        for k in range(count):
            name = f"profwin.tokens x{k:07d}{pad}"
            f.write(f',\n{{"ph":"X","cat":"user_annotation","name":"{name}","pid":1,"tid":1,"ts":{1 + 10 * k},"dur":5}}')
        f.write("\n]}\n")
    return path


def peak_rss_mb(*args: str) -> tuple[int, str, str, float]:
    """``profwin ARGS`` in a child of a fresh process (the children's high-water mark is then this
    child's own): its exit code, stdout, stderr and peak RSS in MB."""
    code = (
        "import resource, subprocess, sys; "
        "done = subprocess.run([sys.executable, '-m', 'profwin', *sys.argv[1:]], capture_output=True, text=True); "
        "sys.stdout.write(done.stdout + '\\n' + str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
        "sys.stderr.write(done.stderr); sys.exit(done.returncode)"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600, check=False)
    out, _, rss = done.stdout.rpartition("\n")
    return done.returncode, out, done.stderr, int(rss) / 1024


def test_summarize_holds_many_long_annotations_in_bounded_memory(tmp_path: Path) -> None:
    """262,000 annotations of 1 KiB: 610 MB RSS before (each name kept twice: as an annotation and
    in the name table), about 115 MB now; a small trace's summary is about 80 MB."""
    path = annotated(tmp_path / "annotated.json.gz", 262_000, 1024)
    code, out, err, rss = peak_rss_mb("summarize", str(path), "--json")
    assert code == 0, err[-2000:]
    assert rss < 250, rss
    assert any(n.startswith("262,000 profwin.tokens spans are longer than any annotation") for n in json.loads(out)["notes"])


def test_summarize_notes_annotations_too_long_to_be_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from profwin.cli import main

    path = annotated(tmp_path / "annotated.json.gz", 3, 1024)
    assert main(["summarize", str(path), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any(
        n.startswith("3 profwin.tokens spans are longer than any annotation that follows the form (320 characters)")
        for n in notes
    )


def test_the_longest_annotation_fits_the_bound() -> None:
    from profwin_traces.scan import MAX_TOKENS_CHARS
    from profwin_traces.tokens import parse_step_tokens

    big = 10**18 - 1
    name = (
        f"profwin.tokens window_step={big} decoding={big} token_min={big} token_median={big} token_max={big} "
        f"in_window={big} prefilling={big} prefill_tokens={big} session_step={big}"
    )
    assert parse_step_tokens(name) is not None
    assert len(name) <= MAX_TOKENS_CHARS


def test_many_long_operator_names_in_bounded_memory(tmp_path: Path) -> None:
    """262,000 distinct operator names of 1 KiB: 391 MB RSS before (every name a key of the fast
    path's name table), about 107 MB now: past 16 MiB of names, the rest share one entry."""
    path = tmp_path / "names.json.gz"
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"traceEvents": [\n')
        f.write(
            json.dumps({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 3e6})
        )
        pad = "y" * 1000
        for k in range(262_000):
            f.write(f',\n{{"ph":"X","cat":"cpu_op","name":"z{k:07d}{pad}","pid":1,"tid":1,"ts":{1 + 10 * k},"dur":5}}')
        f.write("\n]}\n")
    code, _, err, rss = peak_rss_mb("summarize", str(path), "--json", "--top", "3")
    assert code == 0, err[-2000:]
    assert rss < 250, rss
