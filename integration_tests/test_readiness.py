"""The suite's one way of waiting for what it starts (``readiness.py``, issue 41, class 7): a process
that is slow but working is waited for, one that died or stalled fails at once saying why, and no
readiness wait of the suite keeps a fixed deadline of its own. Real child processes."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .readiness import RAY_PATIENCE, load_factor, tree_cpu_s, wait_ready

HERE = Path(__file__).resolve().parent

WORKER = """
import sys, time
ready, seconds, mode = sys.argv[1], float(sys.argv[2]), sys.argv[3]
end = time.monotonic() + seconds
while time.monotonic() < end:
    if mode == "busy":
        sum(range(20000))  # CPU time, as an engine importing its modules uses it
    elif mode == "logging":
        print("loading...", flush=True); time.sleep(0.2)
    else:
        time.sleep(0.2)  # neither CPU nor output: stalled
if mode != "dies":
    open(ready, "w").close()
    time.sleep(600)
sys.exit(3)
"""


def start(tmp_path: Path, seconds: float, mode: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    ready, log = tmp_path / "ready", tmp_path / "log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(ready), str(seconds), mode], stdout=out, stderr=subprocess.STDOUT
        )
    return proc, ready, log


@pytest.mark.parametrize("mode", ["busy", "logging"])
def test_a_slow_process_that_works_is_waited_for(tmp_path: Path, mode: str) -> None:
    """It takes 6 s where the stall limit is 2 s: working (CPU time or log output) keeps the wait
    going, where a fixed 2 s deadline fails it."""
    proc, ready, log = start(tmp_path, 6, mode)
    try:
        waited = wait_ready(ready.exists, what="the worker", proc=proc, log=log, stall_s=2 / load_factor(), cap_s=120, poll_s=0.2)
    finally:
        proc.kill()
        proc.wait()
    assert waited >= 6


def test_a_process_that_stalls_fails_saying_so(tmp_path: Path) -> None:
    proc, ready, log = start(tmp_path, 600, "stalled")
    began = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match=r"^the worker made no progress for \d+ s \(no CPU time, no log output"):
            wait_ready(ready.exists, what="the worker", proc=proc, log=log, stall_s=2 / load_factor(), cap_s=120, poll_s=0.2)
    finally:
        proc.kill()
        proc.wait()
    assert time.monotonic() - began < 60


def test_a_process_that_dies_fails_at_once_with_its_log(tmp_path: Path) -> None:
    proc, ready, log = start(tmp_path, 1, "dies")
    with pytest.raises(RuntimeError, match=r"^the worker exited with 3 after \d+ s while starting\n") as caught:
        wait_ready(ready.exists, what="the worker", proc=proc, log=log, cap_s=120, poll_s=0.2)
    proc.wait()
    assert "exited with 3" in str(caught.value)


def test_the_cap_holds_however_a_process_works(tmp_path: Path) -> None:
    proc, ready, log = start(tmp_path, 600, "busy")
    try:
        with pytest.raises(RuntimeError, match=r"^the worker not ready after \d+ s, the cap for one wait"):
            wait_ready(ready.exists, what="the worker", proc=proc, log=log, cap_s=3, poll_s=0.2)
    finally:
        proc.kill()
        proc.wait()


def test_cpu_time_of_a_process_tree_counts_its_children(tmp_path: Path) -> None:
    # The child burns 1.5 CPU s by its own clock, whatever the interpreter's speed (Debian's
    # PGO-built 3.11 did sum(range(10**8)) in 0.65 s, and the tree never reached 1 s).
    busy = "import time\nwhile time.process_time() < 1.5: pass"
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {busy!r}]); import time; time.sleep(600)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 120
        # The parent sleeps: the CPU is its child's, counted while it runs and after it ended (a
        # check that had to catch it alive missed it on a loaded machine: 0.26 s of margin).
        while tree_cpu_s(proc.pid) < 1.0:
            assert proc.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait()


def test_ray_startup_deadlines_are_raised_only_for_startup() -> None:
    """Each is a wait for something to come up; none is a health check or death detection, which
    tests that kill nodes rely on."""
    assert all(key.startswith("RAY_") for key in RAY_PATIENCE)
    assert not any("health" in key or "heartbeat" in key or "death" in key for key in RAY_PATIENCE)
    assert RAY_PATIENCE["RAY_worker_niceness"] == "0"  # and the workers are not starved on a shared machine


# A readiness loop of its own: a deadline computed from now and a sleep, or a fixed-seconds loop.
_OWN_LOOP = re.compile(r"(deadline\s*=\s*time\.monotonic\(\)\s*\+|while time\.monotonic\(\) - \w+ < \d|time\.sleep\()")
# sglang_server.py launches the SGLang test servers, whose launch another change owns; its startup
# deadline is a generous constant (STARTUP_TIMEOUT_S) until it moves to readiness.wait_ready.
_ALLOWED = {"readiness.py", "test_readiness.py", "sglang/sglang_server.py"}


def test_every_readiness_wait_of_the_suite_goes_through_readiness() -> None:
    """A wait with its own fixed deadline failed CI on a loaded machine (a Ray node, SGLang and vLLM
    servers, routers): the suite has one way to wait, and this keeps it so."""
    offenders = []
    for path in sorted(HERE.rglob("*.py")):
        name = str(path.relative_to(HERE))
        if name in _ALLOWED or "stubs" in path.parts or "standin" in name:
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if _OWN_LOOP.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []
