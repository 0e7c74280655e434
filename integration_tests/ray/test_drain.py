"""A chunk read still in flight when ``collect`` gives up on a file is cancelled and answered
for, so its later failure prints no Ray "Unhandled error" dump (``drain_check.py``: real Ray 2.60;
the dump was in 2 of 3 loaded full runs, from ``profwin collect`` leaving after a Ctrl-C)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ..readiness import CAP_S

pytestmark = [pytest.mark.slow, pytest.mark.ray]

HERE = Path(__file__).resolve().parent


def test_a_read_left_in_flight_is_ended_and_its_failure_collected(
    ray_python: Path, ray_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [str(ray_python), str(HERE / "drain_check.py"), str(tmp_path)],
        env=ray_env, capture_output=True, text=True, timeout=CAP_S, check=False,
    )  # fmt: skip
    why = f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, why
    assert "DRAINED" in done.stdout, why
    assert "worker ended by the drain: True" in done.stdout, why  # the drain cancelled it, not the kill
    assert "Unhandled error" not in done.stderr, why
    assert "Traceback" not in done.stderr, why
