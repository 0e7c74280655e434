"""A chunk read still running when ``collect`` gives up on a file (a failure or Ctrl-C) is
answered for, so Ray prints no "Unhandled error" dump when that read fails later
(``profwin_ray.cluster._Copy._drain``, called here directly: the copy's other paths are
``cluster_checks.py``'s). Real Ray 2.60, one node started by this driver.

The read never answers (it blocks). After the drain this driver, still connected, kills the worker
that ran it if it is still alive: what Ray does to a job's workers when the job's driver leaves,
which is how ``profwin collect`` met it after a Ctrl-C on a loaded machine (the dump in 2 of 3
full runs). A reference dropped while its task runs does not stop Ray from reporting the task's
failure, so before, the kill put the dump on this process's stderr.

Prints ``worker ended by the drain: True|False`` and ``DRAINED`` on stdout.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

import ray

from profwin_ray.cluster import _Copy, _on, _Progress

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readiness import wait_ready  # standard library only: the suite's one way to wait

work = Path(sys.argv[1])
ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR")  # its own cluster, never another test's


def stuck(pid_file: str) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    threading.Event().wait()  # never answers


pid_file = work / "worker.pid"
# A task as collect makes its reads: pinned to the node, no retries.
ref = _on(ray, ray.get_runtime_context().get_node_id(), stuck).remote(str(pid_file))
wait_ready(pid_file.exists, what="the stuck read", poll_s=0.1)
pid = int(pid_file.read_text())
copy = _Copy(ray, work / "dest", 1024, threading.Event(), _Progress([], False), {})
copy._drain([ref])
del ref
settle = threading.Event()  # waits that nothing sets: a pause, not a readiness wait
settle.wait(1)
ended = True
with contextlib.suppress(ProcessLookupError):
    os.kill(pid, signal.SIGKILL)
    ended = False
print(f"worker ended by the drain: {ended}", flush=True)
settle.wait(5)  # long enough for Ray to report the killed task's failure here
print("DRAINED", flush=True)
ray.shutdown()
