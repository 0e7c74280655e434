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

from _import_only import install  # stubs/, on the same PYTHONPATH

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


def __getattr__(name: str) -> object:
    if name.startswith("__"):
        raise AttributeError(name)
    return _placeholder(f"sgl_kernel.{name}")


install("sgl_kernel", lambda module, name: _placeholder(f"{module}.{name}"))
