"""profwin-ray's public callables take bad arguments as errors of profwin's family
(``bad_arguments_check.py``, in the Ray 2.60 environment with a local one-node cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import RayDriver

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def test_profwin_rays_public_callables_raise_profwins_errors_only(ray_driver: RayDriver, tmp_path: Path) -> None:
    done, why = ray_driver("bad_arguments_check.py", tmp_path)
    assert done.returncode == 0, why
    assert "UNEXPECTED 0\n" in done.stdout, why
    calls = int(done.stdout.split("CALLS ")[1].split()[0])
    assert calls >= 5 * 30, why  # every callable, each parameter, each value
