"""The HTA 0.5.0 environment the agreement tests run HolisticTraceAnalysis in."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import built_python

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def hta_python() -> Path:
    return built_python(HERE / "build_hta_env.sh", label="HTA 0.5.0")
