"""Who serves a URL on this machine (``/proc``), read from real processes started here."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from profwin.runtime.processes import LocalProcess, serving_processes

# A real listener that also starts a child, as a server's launcher starts its workers.
_SERVER = """
import socket, subprocess, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
child = subprocess.Popen(["bash", "-c", "exec -a worker-title sleep 600"])
print(s.getsockname()[1], child.pid, flush=True)
time.sleep(600)
"""


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[str], int, int]]:
    env = {**os.environ, "PROFWIN_TEST_MARK": "seen-by-proc"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True, env=env, start_new_session=True, cwd="/"
    )
    assert proc.stdout is not None
    port, child = map(int, proc.stdout.readline().split())
    proc.stdout.close()
    try:
        yield proc, port, child
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def test_the_listener_and_its_children_with_their_environment(server: tuple[subprocess.Popen[str], int, int]) -> None:
    proc, port, child = server
    deadline = time.monotonic() + 30

    def child_exec_done(found: list[LocalProcess] | None) -> bool:
        # The child is bash until its exec: found, with bash's title, before it has the worker's.
        return found is not None and any(p.pid == child and p.title[:1] == ("worker-title",) for p in found)

    found = serving_processes(f"http://127.0.0.1:{port}")
    while not child_exec_done(found) and time.monotonic() < deadline:
        time.sleep(0.1)
        found = serving_processes(f"http://127.0.0.1:{port}")
    assert found is not None
    assert found[0].pid == proc.pid
    assert found[0].environ is not None
    assert found[0].environ["PROFWIN_TEST_MARK"] == "seen-by-proc"
    assert found[0].cwd == "/"
    assert [p.title[0] for p in found if p.pid == child] == ["worker-title"]
    # localhost names this machine too
    assert [p.pid for p in serving_processes(f"http://localhost:{port}") or []][:1] == [proc.pid]


def test_nothing_listens_or_another_machine() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert serving_processes(f"http://127.0.0.1:{free}") is None
    assert serving_processes("http://192.0.2.1:8000") is None  # TEST-NET-1: never this machine
    assert serving_processes("http://no-such-host.invalid:8000") is None
    assert serving_processes("http://127.0.0.1:notaport") is None
