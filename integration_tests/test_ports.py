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
    """Four live processes, 200 picks each: 800 distinct ports. Each holds on (its stdin open)
    until all have picked, since a port is promised to a process only while it lives: under load
    one that had finished and exited gave its ports back to the others (798 distinct of 800)."""
    hold = PICK + "; sys.stdout.flush(); sys.stdin.read()"
    procs = [
        subprocess.Popen([sys.executable, "-c", hold, str(HERE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    try:
        picked = [int(p) for proc in procs for p in proc.stdout.readline().split()]  # type: ignore[union-attr]
    finally:
        for proc in procs:
            proc.communicate(timeout=120)  # closes its stdin: it ends
    assert all(proc.returncode == 0 for proc in procs)
    assert len(picked) == 800
    assert len(set(picked)) == 800


def test_one_process_is_never_given_the_same_port_twice() -> None:
    picked = [ports.free_port() for _ in range(200)]
    assert len(set(picked)) == 200


def test_a_claim_whose_process_ended_is_taken_over() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PICK.replace("range(200)", "range(1)"), str(HERE)], capture_output=True, text=True, check=True
    )
    port = int(done.stdout)
    claim = ports.CLAIMS / str(port)
    assert claim.read_text() != ""  # held by a process that has ended
    assert ports._claim(port)
    assert claim.read_text() == str(__import__("os").getpid())
