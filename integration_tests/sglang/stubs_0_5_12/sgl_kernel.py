"""Import-only stand-in for ``sgl_kernel``: a TEST-HARNESS SHIM for the SGLang 0.5.12 tests.

SGLang 0.5.12 imports CUDA kernels from ``sgl_kernel`` at module level even with ``--device cpu``
(``mem_cache/memory_pool_host.py``: ``from sgl_kernel.kvcacheio import transfer_kv_...`` unless the
device is NPU/XPU/MPS), and PyPI's ``sglang-kernel`` wheel is a CUDA build with no CPU ops. A tiny
Llama served on CPU never calls any of them (host-memory KV offload, CUDA samplers and MoE are
off), so this module makes ``sgl_kernel`` and every ``sgl_kernel.*`` submodule import, with every
attribute a placeholder that raises if it is called. ``torch.ops.sgl_kernel`` stays empty, so
SGLang's own probes (``is_intel_amx_backend_available``) still answer False.
It sits only on the PYTHONPATH of the SGLang 0.5.12 server the tests start; never shipped.
"""

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+stub"
__path__: list[str] = []


class _Placeholder:
    """Stands for any sgl_kernel object: attributes are placeholders too (SGLang reads
    ``scalar_types.uint4b8`` at import time), calling one raises."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, name: str) -> "_Placeholder":
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(f"{self._name}.{name}")

    def __call__(self, *args: object, **kwargs: object) -> object:
        raise RuntimeError(f"sgl_kernel stub: {self._name} called (CUDA kernel; the SGLang 0.5.12 test harness has none)")


def _placeholder(name: str) -> object:
    return _Placeholder(name)


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(f"{self.__name__}.{name}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith("sgl_kernel."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def __getattr__(name: str) -> object:
    if name.startswith("__"):
        raise AttributeError(name)
    return _placeholder(f"sgl_kernel.{name}")


sys.meta_path.insert(0, _Finder())
