"""Without a usable torch_npu (this machine): a clear PluginError and a "missing dependency"
status, never an ImportError traceback."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest

import profwin
import profwin.plugin
from profwin import PluginError, ProfileSpec, Session, Window
from profwin_npu import NpuProfiler, engine_flavour, import_torch_npu


def test_plugins_lists_npu_as_missing_dependency(no_torch_npu: None) -> None:
    info = {p.name: p for p in profwin.plugins(profwin.plugin.PROFILERS_GROUP)}["npu"]
    assert info.status == "missing dependency"
    assert "torch_npu" in info.detail
    assert "CANN" in info.detail
    assert info.distribution == "profwin-npu"


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter: core caches loaded plugins per process."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_loading_the_profiler_is_a_plugin_error() -> None:
    done = run_python("import profwin; profwin.profiler('npu')")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("profwin.errors.PluginError: profiler 'npu' from profwin-npu")
    assert "missing dependency (needs torch_npu" in last
    assert "ImportError" not in done.stderr


def test_cli_lists_npu_as_missing_dependency() -> None:
    done = run_python("import sys; from profwin.cli import main; sys.exit(main(['plugins', '--json']))")
    assert done.returncode == 0, done.stderr
    (npu,) = [p for p in json.loads(done.stdout) if p["name"] == "npu"]
    assert npu["status"] == "missing dependency"
    assert "Ascend CANN toolkit" in npu["detail"]


def test_session_start_is_a_plugin_error(no_torch_npu: None, tmp_path: Path) -> None:
    session = Session(ProfileSpec(window=Window(1, 3), output_dir=tmp_path), profiler=NpuProfiler())
    with pytest.raises(PluginError, match=r"needs torch_npu.*CANN toolkit.*set_env\.sh") as err:
        session.start()
    assert err.value.__cause__ is None  # no chained ImportError traceback
    assert err.value.__suppress_context__


class _Broken(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes ``import torch_npu`` fail the way an installed wheel does without CANN."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(fullname, self) if fullname == "torch_npu" else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        raise self.error

    def exec_module(self, module: ModuleType) -> None:
        raise AssertionError("never reached")


@pytest.mark.parametrize(
    "error",
    [
        ImportError("libhccl.so: cannot open shared object file: No such file or directory"),
        RuntimeError("Failed to load the backend extension: torch_npu."),
        OSError("libascendcl.so: cannot open shared object file"),
    ],
)
def test_installed_without_cann(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_Broken(error), *sys.meta_path])
    with pytest.raises(PluginError) as err:
        import_torch_npu()
    assert f"{type(error).__name__}: {error}" in str(err.value)
    assert "CANN" in str(err.value)


def test_engine_flavours_need_no_torch_npu(no_torch_npu: None) -> None:
    # Rendering arguments for a remote Ascend server must work on a machine without torch_npu.
    flavour = engine_flavour("vllm-ascend", "0.23.0", ProfileSpec(window=Window(2, 5)), warn=False)
    assert flavour["honours_window"] is True


@pytest.mark.skipif(os.environ.get("PROFWIN_NPU_MACHINE") == "1", reason="an Ascend machine has torch_npu on purpose")
def test_torch_npu_is_not_installed_in_this_environment() -> None:
    # torch_npu breaks `import torch` without CANN; it must never be in the dev venv or CI.
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution("torch-npu")
