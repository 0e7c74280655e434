"""Import-only stand-in for torchvision: a TEST-HARNESS SHIM for the sglang integration tests.

SGLang 0.5.23 imports ``torchvision.transforms`` at module level on the path to its request types
(io_struct -> schedule_batch -> ... -> multimodal/internvl_utils), although a text-only Llama never
uses it, and PyPI's torchvision cannot load beside the CPU torch build these machines have. The
tests put this folder on PYTHONPATH of the SGLang server they start: every ``torchvision.*``
module imports as an empty package, every attribute is a placeholder that raises if called, and
``InterpolationMode`` is a real enum because SGLang reads its members at import time.
It is never shipped and never installed anywhere.
"""

import enum
import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+stub"
__path__: list[str] = []


class InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


class _Placeholder:
    """Stands for any torchvision class or function; usable as a base class, fails when called."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("torchvision stub called: the sglang test harness has no real torchvision")


def _attribute(name: str) -> object:
    if name == "InterpolationMode":
        return InterpolationMode
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Placeholder,), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        return _attribute(name)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def __getattr__(name: str) -> object:
    return _attribute(name)


sys.meta_path.insert(0, _Finder())
