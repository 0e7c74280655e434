"""Readiness waits that hold on a loaded machine: the one way the suite waits for what it starts.

CI runs on a machine whose load profwin does not control (a 2-core machine at load 8-12, another
process holding most of its memory for minutes). A fixed deadline of a few minutes there fails a
server that is starting, only slowly. So every wait for an engine server, a router or a Ray node
that the suite starts goes through here, and no assertion about what the started thing does is
touched:

- :func:`wait_ready` keeps waiting while the process it waits for is alive and making progress
  (its process tree's CPU time grows, or its log grows); it fails at once when the process ends,
  when it made no progress for :data:`STALL_S` (scaled up by the machine's load,
  :func:`load_factor`), or after :data:`CAP_S` in all. The message says which, with the log's tail.
- :data:`RAY_PATIENCE`: Ray's own startup deadlines, raised through the environment variables Ray
  reads (``RAY_<setting>``) for every process of a cluster the suite starts, and its workers run
  at the priority of the rest of the suite; and
  :func:`patient_ray`, for the one Ray 2.60 hard-codes (a node's raylet must register with the GCS
  within 30 s, ``ray/_private/node.py``: "The current node timed out during startup"), which a
  driver calls before it starts a node.

Standard library only: drivers in the engines' own environments import it too (with this folder
on ``sys.path``).
"""

from __future__ import annotations

import functools
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CAP_S", "RAY_PATIENCE", "STALL_S", "load_factor", "patient_ray", "tree_cpu_s", "wait_ready"]

CAP_S = float(os.environ.get("PROFWIN_READY_CAP_S", "1800"))
"""The longest one wait may take in all, however the process progresses (30 min): a server that
starts at all on a loaded 2-core machine is up long before; past it something is wrong."""
STALL_S = float(os.environ.get("PROFWIN_READY_STALL_S", "300"))
"""How long a process may show no progress (no CPU time, no log output) on a quiet machine before
the wait gives up; times :func:`load_factor` on a loaded one."""
RAY_NODE_START_S = 600.0
"""How long a Ray node's raylet may take to register with the GCS (Ray 2.60: 30 s, fixed)."""

RAY_PATIENCE = {
    "RAY_worker_register_timeout_seconds": "600",  # a worker process (python, its imports) registering: 60 s
    "RAY_agent_register_timeout_ms": "600000",  # a raylet's agents (runtime env, dashboard) registering
    "RAY_gcs_rpc_server_connect_timeout_s": "60",  # a raylet's first connection to the GCS: 5 s
    "RAY_gcs_rpc_server_reconnect_timeout_s": "600",  # a raylet that cannot reach a busy GCS exits after: 60 s
    "RAY_gcs_server_request_timeout_seconds": "300",  # the Python GCS client's calls: 60 s
    "RAY_py_gcs_connect_timeout_s": "300",  # a driver connecting to the GCS: 30 s
    "RAY_NUM_REDIS_GET_RETRIES": "300",  # a node start reading the GCS address, about 1 s each: 20
    # Not a deadline: Ray starts its workers at nice 15, for a driver's sake on a machine of its
    # own. On a shared one that starves the suite's actors: beside two busy processes at nice 0,
    # an OpenRLHF rollout actor got 1.7% of a core and was still in __init__ after 573 s. At 0
    # they get their share like every other process of the suite (Ray's job manager does the
    # same for its drivers).
    "RAY_worker_niceness": "0",
}
"""Ray's startup deadlines, raised (each only a wait for something to come up: no health check,
no death detection, nothing a test asserts on is slowed). Not ``raylet_client_connect_timeout_milliseconds``:
raised, a node start often waited the whole setting (120 s: a node up in 123 s in 5 of 6 starts of
a driver with PYTHONPATH and node env_vars, 60 s: 62 s, on a quiet machine; 3 s at Ray's own value,
every time), as if a missed first connection waited out the timeout; Ray's source was not read to
confirm why. The scale-out benchmark's smoke took 256 s in the suite with it. Put in the environment of every Ray
driver the suite starts; its raylets, GCS and workers inherit it."""


def load_factor() -> float:
    """How much busier than its cores the machine is now (1-minute load over cores), at least 1."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        return 1.0


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user and system) of the process ``pid`` and every descendant, from ``/proc``
    (0 where it cannot be read): what shows that a slow process is still working. Children that
    have ended count too (their parent's cutime and cstime), so the total never goes back down
    when a busy helper process exits."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        child = int(entry.name)
        parents[child] = int(fields[1])
        cpu[child] = sum(int(value) for value in fields[11:15]) / tick
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += cpu.get(current, 0.0)
        todo += [child for child, parent in parents.items() if parent == current]
    return total


def _log_size(log: Path | None) -> int:
    try:
        return log.stat().st_size if log is not None else 0
    except OSError:
        return 0


def _tail(log: Path | None) -> str:
    if log is None:
        return ""
    try:
        return "\n" + log.read_text(errors="replace")[-4000:]
    except OSError:
        return ""


def wait_ready(
    ready: Callable[[], bool],
    *,
    what: str,
    proc: subprocess.Popen[Any] | None = None,
    log: Path | None = None,
    cap_s: float = CAP_S,
    stall_s: float = STALL_S,
    poll_s: float = 1.0,
) -> float:
    """Call ``ready()`` every ``poll_s`` until it is true; the seconds it took.

    While ``proc`` is alive and progressing (its tree's CPU time or ``log`` grew within ``stall_s``
    times the machine's :func:`load_factor`), the wait goes on, up to ``cap_s`` in all. It fails
    (``RuntimeError`` naming ``what``, why, the time waited and the log's tail) when ``proc``
    exits, stalls, or the cap passes. Without ``proc`` only the cap holds. ``ready`` may raise
    ``OSError`` or ``ValueError`` (not answering yet): that is "not ready"."""
    began = time.monotonic()
    last_progress = began
    seen = (tree_cpu_s(proc.pid) if proc is not None else 0.0, _log_size(log))
    while True:
        try:
            if ready():
                return time.monotonic() - began
        except (OSError, ValueError):
            pass
        now = time.monotonic()
        waited = now - began
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} after {waited:.0f} s while starting{_tail(log)}")
        if waited > cap_s:
            raise RuntimeError(f"{what} not ready after {waited:.0f} s, the cap for one wait{_tail(log)}")
        if proc is not None:
            progress = (tree_cpu_s(proc.pid), _log_size(log))
            if progress[0] > seen[0] + 0.05 or progress[1] != seen[1]:
                seen, last_progress = progress, now
            allowed = stall_s * load_factor()
            if now - last_progress > allowed:
                raise RuntimeError(
                    f"{what} made no progress for {now - last_progress:.0f} s (no CPU time, no log output; "
                    f"{allowed:.0f} s allowed at this load) after {waited:.0f} s while starting{_tail(log)}"
                )
        time.sleep(poll_s)


def patient_ray() -> None:
    """Let a Ray node this process starts take up to :data:`RAY_NODE_START_S` for its raylet to
    register with the GCS, where Ray 2.60 allows 30 s and then fails the start ("The current node
    timed out during startup"). Ray polls ``ray._private.services.get_node`` and checks its 30 s
    after each failed poll; the poll here keeps asking (the raylet registers, or the time is up)
    before it reports the failure. Also puts :data:`RAY_PATIENCE` in this process's environment
    (for the nodes it starts) where the caller has not set them. Call it before ``ray.init`` or a
    ``ray.cluster_utils.Cluster``."""
    for key, value in RAY_PATIENCE.items():
        os.environ.setdefault(key, value)
    from ray._private import services

    get_node = services.get_node
    if getattr(get_node, "_profwin_patient", False):
        return

    @functools.wraps(get_node)
    def patient(*args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + RAY_NODE_START_S
        while True:
            try:
                return get_node(*args, **kwargs)
            except RuntimeError:  # not registered yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    patient._profwin_patient = True  # type: ignore[attr-defined]
    services.get_node = patient
