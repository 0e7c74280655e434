"""The HTA 0.5.0 environment the agreement tests run HolisticTraceAnalysis in."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def hta_python() -> Path:
    proc = subprocess.run(["bash", str(HERE / "build_hta_env.sh")], capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        pytest.fail(f"the HTA 0.5.0 environment could not be built (build_hta_env.sh):\n{proc.stderr[-2000:]}")
    return Path(proc.stdout.strip().splitlines()[-1]) / "bin" / "python"
