"""Every command line with a closed, full or broken stdout or stderr: the documented exit code and
no traceback (``run_cli`` is the one place that handles it).

One Python process imports the commands once and runs every command of ``profwin`` and
``profwin-memory`` under each fault, each run in a forked child that exits the way the console
script does (``sys.exit(main(argv))``, the interpreter's last flush of the streams included) and
whose exit status the driver reports on a pipe of its own. The faults are real descriptors:
``/dev/full``, a pipe whose reader is gone, a closed descriptor (with ``sys.stdout`` or
``sys.stderr`` set to ``None``, as the interpreter sets it when it starts without one); a baseline
with working pipes says what each command does when nothing is wrong. Two commands also start a
real interpreter with ``>&-`` and ``2>&-``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from profwin.cli_runner import EXIT_BROKEN_PIPE, EXIT_ERROR

ESCAPED = 99  # a child whose main() let an exception out (it would have printed a traceback)


@attrs.frozen
class Runs:
    codes: dict[str, dict[str, int]]
    """Exit code by fault (``"none"``: the baseline), then by case."""
    printed: dict[str, bool]
    """Whether a case prints to stdout when it works."""
    said: dict[str, str]
    """The driver's stderr by fault (where the children's stderr goes under stdout's faults)."""


FAULTS = [f"{stream} {how}" for stream in ("stdout", "stderr") for how in ("closed", "full", "broken")]

DRIVER = r"""
import contextlib, gc, io, json, os, sys
report, cases, faults = int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
from profwin.cli import main as profwin_main
from profwin_memory.cli import main as memory_main
mains = {"profwin": profwin_main, "profwin-memory": memory_main}
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    for prog, argv in cases:  # once, so that each fork finds every module imported
        mains[prog](argv)
gc.freeze()  # the forks' exits need not walk the imported modules' objects (half their cost)
full = os.open("/dev/full", os.O_WRONLY)
reader, broken = os.pipe()
os.close(reader)  # what `| head -c1` does once it has read enough
for fault in faults:
    print(f"== {fault}", file=sys.stderr, flush=True)
    stream, _, how = fault.partition(" ")
    for prog, argv in cases:
        out_r, out_w = os.pipe()  # the baseline's stdout, to tell which commands print there
        pid = os.fork()
        if pid == 0:
            os.close(report)
            os.close(out_r)
            fd = 1 if stream == "stdout" else 2
            if fault == "none":
                os.dup2(out_w, 1)
            elif how == "closed":  # what the interpreter does when it starts without the descriptor
                os.close(fd)
                setattr(sys, stream, None)
                setattr(sys, f"__{stream}__", None)
            elif how in ("full", "broken"):
                os.dup2(full if how == "full" else broken, fd)
            try:
                code = mains[prog](argv)
            except BaseException:
                os._exit(99)
            sys.exit(code)  # the interpreter's last flush of stdout and stderr happens here
        os.close(out_w)
        with os.fdopen(out_r, "rb") as out:
            printed = bool(out.read())
        _, status = os.waitpid(pid, 0)
        os.write(report, (json.dumps([fault, prog, argv, os.waitstatus_to_exitcode(status), printed]) + "\n").encode())
"""


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, list[str]]]:
    """Each command once where it writes to stdout, and some where it fails on stderr."""
    work = tmp_path_factory.mktemp("streams")
    spec = work / "spec.json"
    spec.write_text(json.dumps({"window": "2:5", "output_dir": str(work / "out")}))
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": k * 10.0, "dur": 9.0}
              for k in range(4)]  # fmt: skip
    events += [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": k * 10.0 + 1, "dur": 2.0} for k in range(4)
    ]
    trace = work / "t.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    dead = _dead_url()
    remote = ["--engine", "vllm", "--url", dead, "--out", str(work / "out"), "--timeout", "5"]
    profwin = [
        ["--version"], ["--help"], ["plugins"], ["plugins", "--json"], ["validate", str(spec)], ["window", "20:80"],
        ["window", "20:80", "--json"], ["args", "vllm", "--window", "2:5"], ["start", *remote], ["stop", *remote, "--json"],
        ["demo", "--steps", "0"], ["summarize", str(trace)], ["summarize", str(trace), "--json"],
        ["summarize", str(work / "missing.json")], ["summarize", str(work / "missing.json"), "--json"],
        ["diff", str(trace), str(trace)], ["trim", str(trace), "--window", "1:3", "-o", str(work / "trimmed.json")],
        ["merge", str(trace), str(trace), "-o", str(work / "merged.json.gz")],
        ["merge", str(trace), str(trace), "-o", str(work / "merged.json.gz"), "--json"],
        ["collect", "--ray", "--from", "/x/*", "--to", str(work / "collected")],
    ]  # fmt: skip
    memory = [["--help"], ["summarize", str(work / "missing.json")], ["summarize", str(work / "missing.json"), "--json"]]
    return [("profwin", argv) for argv in profwin] + [("profwin-memory", argv) for argv in memory]


@pytest.fixture(scope="module")
def runs(cases: list[tuple[str, list[str]]]) -> Runs:
    """The exit code of each case under each fault (and ``"none"``), which cases print to stdout
    when it works, and the driver's stderr under each fault."""
    read, write = os.pipe()
    cmd = [sys.executable, "-c", DRIVER, str(write), json.dumps(cases), json.dumps(["none", *FAULTS])]
    with subprocess.Popen(cmd, pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        os.close(write)
        with os.fdopen(read) as reports:
            lines = reports.read().splitlines()
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    codes: dict[str, dict[str, int]] = {}
    printed: dict[str, bool] = {}
    for fault, prog, argv, code, wrote in map(json.loads, lines):
        codes.setdefault(fault, {})[json.dumps([prog, argv])] = code
        if fault == "none":
            printed[json.dumps([prog, argv])] = wrote
    said = {part.partition("\n")[0]: part.partition("\n")[2] for part in err.split("== ")[1:]}
    return Runs(codes, printed, said)


def test_the_baseline_covers_every_kind_of_answer(runs: Runs) -> None:
    assert set(runs.codes["none"].values()) == {0, 1, 2}  # successes, start's failed server, errors
    assert ESCAPED not in runs.codes["none"].values()
    assert sum(runs.printed.values()) >= len(runs.printed) - 4  # all but the plain errors print an answer


@pytest.mark.parametrize("how", ["closed", "full", "broken"])
def test_stdout_that_cannot_be_written(runs: Runs, how: str) -> None:
    baseline = runs.codes["none"]
    err = runs.said[f"stdout {how}"]
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert len(runs.codes[f"stdout {how}"]) == len(baseline)
    for key, code in runs.codes[f"stdout {how}"].items():
        if not runs.printed[key] or baseline[key] == EXIT_ERROR:  # an error stays one: its message is on stderr
            assert code == baseline[key], key
        else:  # its answer could not be printed
            assert code == (EXIT_BROKEN_PIPE if how == "broken" else EXIT_ERROR), key
    if how != "broken":
        why = "it is closed" if how == "closed" else "No space left on device"
        lines = [line for line in err.splitlines() if line.endswith(f": error: cannot write to stdout: {why}")]
        assert len(lines) == sum(runs.printed[key] and code != EXIT_ERROR for key, code in baseline.items())


@pytest.mark.parametrize("how", ["closed", "full", "broken"])
def test_stderr_that_cannot_be_written_changes_no_exit_code(runs: Runs, how: str) -> None:
    assert runs.codes[f"stderr {how}"] == runs.codes["none"]
    assert runs.said[f"stderr {how}"] == ""


@pytest.mark.parametrize(("redirect", "code", "err"), [
    (">&-", EXIT_ERROR, "profwin: error: cannot write to stdout: it is closed\n"),
    ("2>&-", 0, ""),
])  # fmt: skip
def test_a_real_start_without_a_standard_stream(redirect: str, code: int, err: str) -> None:
    done = subprocess.run(
        ["bash", "-c", f'exec "$@" {redirect}', "bash", sys.executable, "-m", "profwin", "window", "20:80"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (code, err)


def test_no_file_takes_the_number_of_a_closed_stdout(tmp_path: Path) -> None:
    """With descriptor 1 closed at start, the first file a command opens would get number 1, and
    whatever writes to "stdout" would write into it. ``--json`` prints its document on the real
    stdout: here nowhere, so the command fails, and the trimmed trace it wrote is intact."""
    trace = tmp_path / "t.json"
    events = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": k * 10.0, "dur": 9.0}
              for k in range(4)]  # fmt: skip
    trace.write_text(json.dumps({"traceEvents": events}))
    out = tmp_path / "trimmed.json"
    script = "import os, sys; from profwin.cli import main; os.write(2, str(main(sys.argv[1:])).encode())"
    done = subprocess.run(
        ["bash", "-c", 'exec "$@" >&-', "bash", sys.executable, "-c", script, "trim", str(trace), "--window", "1:3", "-o", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.stderr == "profwin: error: cannot write to stdout: it is closed\n2"
    assert [e["name"] for e in json.loads(out.read_text())["traceEvents"]] == ["ProfilerStep#1", "ProfilerStep#2"]
