"""The cached Ray 2.60.0 environment (``build_env.sh``: ray + CPU torch, built on first use) and
how profwin reaches it: this checkout's src folders on PYTHONPATH, with the dist-info an install
of profwin-core, profwin-traces and profwin-ray would write (their entry points), never installed in the cache."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ..conftest import built_python, dist_info_site
from ..readiness import CAP_S, RAY_PATIENCE

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@pytest.fixture(scope="session")
def ray_python() -> Path:
    return built_python(HERE / "build_env.sh", label="Ray 2.60.0")


@pytest.fixture(scope="session")
def ray_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment a Ray driver (and, inherited, every node) runs profwin in."""
    site = dist_info_site(tmp_path_factory.mktemp("ray-site"), "profwin-core", "profwin-traces", "profwin-ray", "profwin-verl")
    # HERE: the nodes' workers import local_cluster (its Engine actor) too; profwin-verl: the
    # relocation switch (its rollout functions need nothing beyond core); node_site: the nodes'
    # hold for the fault tests (its sitecustomize acts only on a node).
    packages = ("profwin-core", "profwin-traces", "profwin-ray", "profwin-verl")
    paths = [HERE / "node_site", site, *(ROOT / "packages" / p / "src" for p in packages), HERE]
    env = {k: v for k, v in os.environ.items() if k not in ("PROFWIN_NODE_DIR", "RAY_ADDRESS")}
    # RAY_ENABLE_UV_RUN_RUNTIME_ENV=0: pytest runs under `uv run`, and Ray would otherwise start
    # every worker with the same `uv run` (the workspace's venv, which has no ray).
    extra = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", **RAY_PATIENCE}
    return {**env, "PYTHONPATH": os.pathsep.join(map(str, paths)), **extra}


RayDriver = Callable[[str, Path], tuple["subprocess.CompletedProcess[str]", str]]


@pytest.fixture(scope="session")
def ray_driver(ray_python: Path, ray_env: dict[str, str]) -> RayDriver:
    """Run one of this folder's driver scripts in the Ray environment, with a work folder as its
    argument: its finished process and a text saying why, for assertions (exit code, the tails of
    stdout and stderr)."""

    def run(script: str, work: Path) -> tuple[subprocess.CompletedProcess[str], str]:
        done = subprocess.run(
            [str(ray_python), str(HERE / script), str(work)],
            env=ray_env, capture_output=True, text=True, timeout=CAP_S, check=False,
        )  # fmt: skip
        return done, f"exit {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"

    return run
