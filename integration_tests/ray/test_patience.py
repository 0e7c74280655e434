"""A Ray node slow to register starts when the suite's drivers start it (``readiness.patient_ray``,
issue 41, class 7): the slime Ray actor test failed CI with "The current node timed out during
startup" on a machine at load 8-12. Real Ray 2.60 (``patience_check.py``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray]

HERE = Path(__file__).resolve().parent


def _start(ray_python: Path, ray_env: dict[str, str], how: str) -> str:
    proc = subprocess.Popen(
        [str(ray_python), str(HERE / "patience_check.py"), how, "40"],
        env=ray_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what a failed start may leave behind
        proc.wait()
    return out


def test_a_node_slow_to_register_starts_under_the_suites_driver(ray_python: Path, ray_env: dict[str, str]) -> None:
    """40 s to register: Ray's own 30 s fail the start; with the suite's patience it comes up."""
    impatient = _start(ray_python, ray_env, "impatient")
    assert "FAILED The current node timed out during startup" in impatient, impatient[-3000:]
    patient = _start(ray_python, ray_env, "patient")
    assert "UP after" in patient, patient[-3000:]
