"""The Holistic Trace Analysis environments the agreement tests run HTA in: traceinsight 0.6.1
(HTA's current distribution) and HolisticTraceAnalysis 0.5.0 (the last one under the old name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import built_python

HERE = Path(__file__).resolve().parent
HTA_ENVIRONMENTS = ("traceinsight-0.6.1", "hta-0.5.0")
"""Cached environment names (build_hta_env.sh), newest first."""


@pytest.fixture(scope="session", params=HTA_ENVIRONMENTS)
def hta_python(request: pytest.FixtureRequest) -> Path:
    return built_python(HERE / "build_hta_env.sh", request.param, label=request.param)


@pytest.fixture(scope="session")
def traceinsight_python() -> Path:
    """traceinsight 0.6.1 alone: the rules profwin follows where HTA's versions differ."""
    return built_python(HERE / "build_hta_env.sh", HTA_ENVIRONMENTS[0], label=HTA_ENVIRONMENTS[0])
