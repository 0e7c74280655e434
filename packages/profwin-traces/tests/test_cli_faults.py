"""The trace commands under faults: every error is one line (or JSON) with a documented exit code,
nothing but a regular file is replaced, and a signal mid-trim leaves nothing behind. Real subprocesses."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from profwin.cli_runner import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED


def profwin(*args: str, timeout: float = 120, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profwin", *args], capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload, no-any-return]


def synthetic_trace(path: Path, steps: int, ops_per_step: int) -> Path:
    """A plain Chrome trace with ``steps`` ProfilerStep markers, each holding ``ops_per_step`` ops."""
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        first = True
        for k in range(steps):
            t = k * 10_000.0
            events = [
                {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": t, "dur": 9000.0}
            ]
            events += [
                {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 50}", "pid": 1, "tid": 1, "ts": t + i, "dur": 0.5}
                for i in range(ops_per_step)
            ]
            for event in events:
                f.write(("" if first else ",\n") + json.dumps(event))
                first = False
        f.write("\n]}\n")
    return path


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_trace(tmp_path_factory.mktemp("trace") / "small.json", steps=6, ops_per_step=3)


@pytest.mark.parametrize("kind", ["fifo", "directory", "devnull"])
def test_trim_refuses_special_outputs_before_reading(tmp_path: Path, small_trace: Path, kind: str) -> None:
    out = {"fifo": tmp_path / "out.fifo", "directory": tmp_path, "devnull": Path("/dev/null")}[kind]
    if kind == "fifo":
        os.mkfifo(out)
    before = os.stat(out)
    # The input does not exist: the output is refused first, so no work is done at all.
    done = profwin("trim", str(tmp_path / "no-such-input.json"), "--window", "1:3", "-o", str(out))
    assert done.returncode == EXIT_ERROR
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert f"cannot write {str(out)!r}: it is a" in done.stderr
    after = os.stat(out)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert not list(tmp_path.glob(".*.partial*"))


HOLD_MID_TRIM = """
import importlib

trim = importlib.import_module("profwin_traces.trim")  # the module (profwin_traces.trim is also its function)
_copy_events = trim._copy_events


def held_copy(index, kept, out, progress, **kwargs):
    out.flush()  # the partial file holds the trace's header
    hold()
    return _copy_events(index, kept, out, progress, **kwargs)


trim._copy_events = held_copy
"""


@pytest.mark.parametrize(
    ("sig", "code", "message"),
    [(signal.SIGTERM, EXIT_TERMINATED, "profwin: terminated"), (signal.SIGINT, EXIT_INTERRUPTED, "profwin: interrupted")],
)
def test_a_signal_during_trim_removes_the_partial_file(
    tmp_path: Path, small_trace: Path, sig: int, code: int, message: str, held_child: Callable[[str], Any]
) -> None:
    """The signal lands while the child is provably mid-trim: held (``held_child``) once the
    partial file holds the header, and signalled only after it is held there."""
    child = held_child(HOLD_MID_TRIM)
    out = tmp_path / "out" / "trimmed.json.gz"
    out.parent.mkdir()
    proc = child.start("trim", str(small_trace), "--window", "0:4", "-o", str(out))
    writer = child.wait_held(proc)
    try:
        assert [p.name for p in out.parent.iterdir() if ".partial" in p.name]  # mid-work: the partial file is there
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
    finally:
        os.close(writer)
    assert proc.returncode == code, stderr
    assert stderr.strip() == message
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["summarize", "x.json", "--top", "-1"], "argument --top: must be an integer >= 0 (got '-1')"),
        (["summarize", "x.json", "--first-step", "٣"], "argument --first-step: must be an integer >= 0"),
    ],
)
def test_numeric_flags_are_checked_by_the_parser(args: list[str], expected: str) -> None:
    done = profwin(*args)
    assert done.returncode == 2
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


def test_errors_are_one_line_or_json(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    done = profwin("summarize", str(missing))
    assert done.returncode == EXIT_ERROR
    assert done.stderr.startswith("profwin: error: ")
    assert done.stderr.count("\n") == 1
    done = profwin("summarize", str(missing), "--json")
    assert done.returncode == EXIT_ERROR
    error = json.loads(done.stdout)
    assert set(error) == {"error", "path"}
    assert str(missing) in error["error"]


@pytest.mark.parametrize("command", ["summarize", "diff", "trim", "merge", "timeline"])
def test_a_name_too_long_for_a_file_system_is_one_line(tmp_path: Path, small_trace: Path, command: str) -> None:
    """The Python API's ``diff`` raised ``OSError: [Errno 36] File name too long`` from a folder check;
    now the argument check says it, and the command line reports either as one line."""
    long = str(tmp_path / ("x" * 300))
    args = {
        "summarize": [long],
        "diff": [long, str(small_trace)],
        "trim": [long, "--window", "1:3", "-o", str(tmp_path / "out.json")],
        "merge": [long, "-o", str(tmp_path / "merged.json")],
        "timeline": [long],
    }[command]
    done = profwin(command, *args)
    assert done.returncode == EXIT_ERROR, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert re.search(r"(File name too long|a name in it is 300 bytes, over the 255 a file system allows)", done.stderr)
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc/self/mem")
def test_a_file_that_opens_but_cannot_be_read_is_one_line() -> None:
    """``/proc/self/mem`` opens and seeks, then its first read fails with ``EIO``: that was an
    ``OSError`` from sniffing the gzip magic, outside the reader's read errors."""
    from profwin_traces import TraceError, summarize

    with pytest.raises(TraceError, match=r"read failed: \[Errno 5\] Input/output error"):
        summarize("/proc/self/mem")
    done = profwin("summarize", "/proc/self/mem")
    assert done.returncode == EXIT_ERROR, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "read failed" in done.stderr
