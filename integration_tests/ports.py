"""Ports for the servers the suite starts: the one way it picks a port another process binds later.

A port taken with ``bind(("127.0.0.1", 0))`` comes from the kernel's ephemeral range, which every
outgoing connection on the machine draws from too, and Ray's workers listen on 10002-19999. On a
loaded machine a server takes tens of seconds to bind the port it was given, and in that time a
client socket or another worker's server took it: a CI-like loaded run lost a whole module of
SGLang tests to ``[Errno 98] address already in use`` on such a port.

So :func:`free_port` picks from 20000 up to the start of the ephemeral range (which the kernel
never hands out), checks the port can be bound now, and claims it for the run with a file that
names the claiming process: no two processes of the suite (xdist workers, drivers in the engines'
environments) are given the same port while the claimer lives.

Standard library only: drivers in the engines' own environments import it too (with this folder
on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import socket
import tempfile
from pathlib import Path

__all__ = ["free_port"]

LOW = 20000  # above Ray's worker ports (10002-19999)
CLAIMS = Path(tempfile.gettempdir()) / "profwin-test-ports"


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux: 32768 unless configured)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    return 32768


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _claim(port: int) -> bool:
    """Claim ``port`` for this process; a claim whose process ended is taken over. The look and
    the write are one step under a lock shared by every process of the suite: a claim seen between
    its file's creation and its writing (empty) must not read as one whose process ended."""
    CLAIMS.mkdir(exist_ok=True)
    path = CLAIMS / str(port)
    with open(CLAIMS / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        try:
            holder = int(path.read_text() or "0")
        except (FileNotFoundError, ValueError):
            holder = 0
        if holder and _alive(holder):  # this process's own claim too: a port is given once
            return False
        path.write_text(str(os.getpid()))
    return True


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port on 127.0.0.1 that nothing holds now, outside the ephemeral range, and that no other
    process of the suite is given while this one lives."""
    high = _ephemeral_low()
    ports = list(range(LOW, high))
    random.shuffle(ports)
    for port in ports:
        if _bindable(port) and _claim(port):
            return port
    raise RuntimeError(f"no free port from {LOW} to {high - 1} on 127.0.0.1")
