"""Misusing a Session is a clear error at the misusing call (real torch on CPU; crashes are
checked in subprocesses, since a crash would take the test run down with it)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from profwin import ConfigError, PluginError, ProfileSpec, Session, Window, current_rank
from profwin.errors import WindowWarning

torch = pytest.importorskip("torch", reason="the torch driver tests need torch (scripts/bootstrap.sh installs a CPU build)")


def run_python(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**environ, **env},
    )  # fmt: skip


def test_step_before_start_is_refused_at_that_call(tmp_path: Path) -> None:
    session = Session(ProfileSpec(window=Window(0, 3), output_dir=tmp_path))
    with pytest.raises(RuntimeError, match=r"step\(\) was called before start\(\)"):
        session.step()
    assert session.steps == 0
    with session:  # the refused call left nothing behind: the session still works
        for _ in range(3):
            torch.ones(4).sum()
            session.step()
    (artifact,) = session.artifacts
    assert artifact.steps == Window(0, 3)


def test_nested_sessions_are_an_error_not_a_crash(tmp_path: Path) -> None:
    done = run_python(
        """
        import torch, profwin
        spec = lambda: profwin.ProfileSpec(window=profwin.Window(0, 4), output_dir="out")
        with profwin.Session(spec()) as outer:
            outer.step()
            try:
                with profwin.Session(spec()) as inner:
                    inner.step()
            except profwin.PluginError as exc:
                print("refused:", exc)
            for _ in range(3):
                torch.ones(4).sum()
                outer.step()
        print("outer wrote", [str(a.steps) for a in outer.artifacts])
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "refused: another profwin session is recording window 0:4 with torch.profiler in this process" in done.stdout
    assert "outer wrote ['0:4']" in done.stdout


def test_a_session_inside_the_users_own_torch_profiler_is_refused(tmp_path: Path) -> None:
    with torch.profiler.profile(), pytest.raises(PluginError, match=r"a torch\.profiler session is already running"):
        Session(ProfileSpec(window=Window(0, 2), output_dir=tmp_path)).start()


@pytest.mark.parametrize("rank", [-1, True, 2**31, 1.0])
def test_explicit_bad_ranks_are_refused(rank: object, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^rank: must be None or an int in \[0, 2147483647\]"):
        Session(ProfileSpec(output_dir=tmp_path), rank=rank)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["٣", "²", "3\u0663", "9" * 5000, "2147483648"])
def test_rank_in_the_environment_is_ascii_digits(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("RANK", value)
    with pytest.raises(ConfigError, match="environment variable RANK must be an integer in") as info:
        current_rank()
    assert len(str(info.value)) < 250


def test_session_keeps_kineto_quiet_unless_the_user_chose_a_level(tmp_path: Path) -> None:
    code = """
        import torch, profwin
        with profwin.Session(profwin.ProfileSpec(window=profwin.Window(0, 2), output_dir="out")) as s:
            for _ in range(2):
                torch.ones(4).sum()
                s.step()
    """
    # Kineto's own lines: "USDT:2026-12-04 15:18:54 17430:17430 SyncActivityProfilerHandler.cpp:52]
    # profiler_start" (torch 2.13), "INFO:... output_json.cpp:764] Renamed the trace file" (2.11).
    kineto_line = re.compile(r"^[A-Z]+:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \w+\.cpp:\d+\]", re.MULTILINE)
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert not kineto_line.search(done.stderr), done.stderr
    done = run_python(code, tmp_path, KINETO_LOG_LEVEL="0")
    assert kineto_line.search(done.stderr), done.stderr  # the user's level is kept


def test_an_open_window_closed_by_the_loop_does_not_warn(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowWarning)
        with Session(ProfileSpec(window=Window.parse("2:"), output_dir=tmp_path)) as session:
            for _ in range(5):
                torch.ones(4).sum()
                session.step()
    assert [a.steps for a in session.artifacts] == [Window(2, 5)]


def test_output_directory_gone_mid_window_is_refused_by_name(tmp_path: Path) -> None:
    out = tmp_path / "out"
    session = Session(ProfileSpec(window=Window(0, 3), output_dir=out))
    with session:
        for _ in range(2):
            torch.ones(4).sum()
            session.step()
        shutil.rmtree(out)  # as when the directory is removed or unmounted mid-window
        with pytest.raises(
            ConfigError, match=r"cannot write '.*/out/profwin_rank0_w0-3\.\d+\.pt\.trace\.json\.gz': its directory"
        ):
            session.step()


def test_a_failing_write_names_the_final_file_and_leaves_nothing(tmp_path: Path) -> None:
    # Root ignores read-only directories, so the write is made to fail by a file-size limit
    # set mid-window (EFBIG), in a subprocess so the limit does not outlive the test. 20 bytes:
    # less than any gzip stream (header and trailer alone are 18), so compressing the plain
    # text torch wrote (cut at the limit) always fails too; at 100 bytes whether the compressed
    # prefix fit depended on how well the trace's first bytes compress.
    done = run_python(
        """
        import resource, signal, torch, profwin
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        with profwin.Session(profwin.ProfileSpec(window=profwin.Window(0, 3), output_dir="out")) as s:
            resource.setrlimit(resource.RLIMIT_FSIZE, (20, resource.RLIM_INFINITY))
            for _ in range(3):
                torch.ones(4).sum()
                try:
                    s.step()
                except profwin.ConfigError as exc:
                    print(exc)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.fullmatch(r"cannot write '.*/out/profwin_rank0_w0-3\.\d+\.pt\.trace\.json\.gz': File too large\n", done.stdout)
    assert list((tmp_path / "out").iterdir()) == []
