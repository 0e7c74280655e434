"""The suite's one way to pick a port a server binds later (``ports.py``): outside the kernel's
ephemeral range and Ray's worker ports, free now, and never given to two processes of the suite.
A loaded run lost a module of SGLang tests to ``[Errno 98] address already in use`` on a port
taken with ``bind(0)``. Real processes and sockets."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from . import ports

HERE = Path(__file__).resolve().parent

PICK = "import sys; sys.path.insert(0, sys.argv[1]); from ports import free_port; print(*(free_port() for _ in range(200)))"


def test_a_port_is_free_and_outside_the_ranges_others_draw_from() -> None:
    port = ports.free_port()
    assert ports.LOW <= port < ports._ephemeral_low()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # nothing holds it


def test_processes_picking_at_once_never_get_the_same_port() -> None:
    procs = [subprocess.Popen([sys.executable, "-c", PICK, str(HERE)], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    picked = [int(p) for proc in procs for p in proc.communicate(timeout=120)[0].split()]
    assert all(proc.returncode == 0 for proc in procs)
    assert len(picked) == 800
    assert len(set(picked)) == 800


def test_a_claim_whose_process_ended_is_taken_over() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PICK.replace("range(200)", "range(1)"), str(HERE)], capture_output=True, text=True, check=True
    )
    port = int(done.stdout)
    claim = ports.CLAIMS / str(port)
    assert claim.read_text() != ""  # held by a process that has ended
    assert ports._claim(port)
    assert claim.read_text() == str(__import__("os").getpid())
