"""profwin-ray's public callables take bad arguments as errors of profwin's family
(``bad_arguments_check.py``, in the Ray 2.60 environment with a local one-node cluster)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ..readiness import CAP_S

pytestmark = [pytest.mark.slow, pytest.mark.ray]

HERE = Path(__file__).resolve().parent


def test_profwin_rays_public_callables_raise_profwins_errors_only(
    ray_python: Path, ray_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [str(ray_python), str(HERE / "bad_arguments_check.py"), str(tmp_path)],
        env=ray_env, capture_output=True, text=True, timeout=CAP_S, check=False,
    )  # fmt: skip
    why = f"exit {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, why
    assert "UNEXPECTED 0\n" in done.stdout, why
    calls = int(done.stdout.split("CALLS ")[1].split()[0])
    assert calls >= 5 * 30, why  # every callable, each parameter, each value
