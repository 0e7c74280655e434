"""The CLI under faults: every error is one line (or JSON) with a documented exit code, nothing but
a regular file is replaced, and SIGTERM or a closed pipe leaves nothing behind. Real subprocesses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from profwin import ConfigError
from profwin.cli_runner import EXIT_BROKEN_PIPE, EXIT_ERROR
from profwin.plugin.files import check_output_path


def profwin(*args: str, timeout: float = 120, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profwin", *args], capture_output=True, text=True, timeout=timeout, **kwargs)  # type: ignore[call-overload, no-any-return]


def test_check_output_path_accepts_new_and_regular_files(tmp_path: Path) -> None:
    assert check_output_path(tmp_path / "new.json") == tmp_path / "new.json"
    (tmp_path / "old.json").write_text("{}")
    assert check_output_path(tmp_path / "old.json") == tmp_path / "old.json"
    with pytest.raises(ConfigError, match=r"its directory .* does not exist"):
        check_output_path(tmp_path / "missing" / "new.json")


def test_check_output_path_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "target")
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        cases = {fifo: "a FIFO", tmp_path: "a directory", Path("/dev/null"): "a character device", link: "a symbolic link"}
        cases[sock_path] = "a socket"
        for path, kind in cases.items():
            with pytest.raises(ConfigError, match=f"it is {kind}; profwin writes only a new file or over a regular file"):
                check_output_path(path)


def test_broken_pipe_is_a_quiet_exit(tmp_path: Path) -> None:
    reader, writer = os.pipe()
    os.close(reader)  # what `| head` does once it has read enough
    try:
        done = subprocess.run(
            [sys.executable, "-m", "profwin", "window", "20:80"], stdout=writer, stderr=subprocess.PIPE, text=True, timeout=120
        )
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (EXIT_BROKEN_PIPE, "")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["demo", "--steps", "0"], "argument --steps: must be an integer >= 1 and <= 2147483647 (got '0')"),
        (
            ["stop", "--engine", "x", "--url", "u", "--timeout", "nan"],
            "argument --timeout: must be a number of seconds > 0 and <= 86,400 (got 'nan')",
        ),
        (
            ["stop", "--engine", "x", "--url", "u", "--timeout", "-1"],
            "argument --timeout: must be a number of seconds > 0 and <= 86,400 (got '-1')",
        ),
        (
            ["start", "--engine", "x", "--url", "u", "--timeout", "1e300"],
            "argument --timeout: must be a number of seconds > 0 and <= 86,400 (got '1e300')",
        ),
        (
            ["start", "--engine", "x", "--url", "u", "--timeout", "1e10"],
            "argument --timeout: must be a number of seconds > 0 and <= 86,400 (got '1e10')",
        ),
        (
            ["stop", "--engine", "x", "--url", "u", "--timeout", "0"],
            "argument --timeout: must be a number of seconds > 0 and <= 86,400 (got '0')",
        ),
    ],
)
def test_numeric_flags_are_checked_by_the_parser(args: list[str], expected: str) -> None:
    done = profwin(*args)
    assert done.returncode == 2
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


def test_errors_are_one_line_or_json(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    done = profwin("validate", str(missing))
    assert done.returncode == EXIT_ERROR
    assert done.stderr.startswith("profwin: error: ")
    assert done.stderr.count("\n") == 1
    done = profwin("validate", str(missing), "--json")
    assert done.returncode == EXIT_ERROR
    error = json.loads(done.stdout)
    assert set(error) == {"error", "path"}
    assert str(missing) in error["error"]


def test_unexpected_exceptions_are_one_line_too(tmp_path: Path) -> None:
    # A deliberately failing stand-in for a bug: sitecustomize makes the parser raise.
    (tmp_path / "sitecustomize.py").write_text(
        "import profwin.cli\ndef boom(*a, **k):\n    raise TypeError('a bug')\nprofwin.cli.build_parser = boom\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    done = profwin("plugins", env=env)
    assert (done.returncode, done.stderr) == (EXIT_ERROR, "profwin: error: internal error, please report it: TypeError: a bug\n")
    done = profwin("plugins", env=dict(env, PROFWIN_TRACEBACK="1"))
    assert "Traceback" in done.stderr
    assert done.returncode == EXIT_ERROR


def test_version_lists_each_distribution_once() -> None:
    done = profwin("--version")
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert names[:2] == ["profwin", "profwin-core"]
    assert len(names) == len(set(names))
    assert "profwin-memory" in names
