"""A chunk read still in flight when ``collect`` gives up on a file is cancelled and answered
for, so its later failure prints no Ray "Unhandled error" dump (``drain_check.py``: real Ray 2.60;
the dump was in 2 of 3 loaded full runs, from ``profwin collect`` leaving after a Ctrl-C)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import RayDriver

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def test_a_read_left_in_flight_is_ended_and_its_failure_collected(ray_driver: RayDriver, tmp_path: Path) -> None:
    done, why = ray_driver("drain_check.py", tmp_path)
    assert done.returncode == 0, why
    assert "DRAINED" in done.stdout, why
    assert "worker ended by the drain: True" in done.stdout, why  # the drain cancelled it, not the kill
    assert "Unhandled error" not in done.stderr, why
    assert "Traceback" not in done.stderr, why
