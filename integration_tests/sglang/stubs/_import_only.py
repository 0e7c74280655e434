"""What the import-only stand-ins share (TEST-HARNESS SHIM, never shipped): a meta-path finder that
makes every ``<package>.*`` submodule import as an empty package whose attributes come from a
factory. Used by ``stubs/torchvision.py`` and ``stubs_0_5_12/sgl_kernel.py`` (see their docstrings
for what each stands in for and why)."""

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable

Attribute = Callable[[str, str], object]
"""``attribute(module_name, name)``: the value of ``module_name.name``."""


class _StubModule(types.ModuleType):
    attribute: Attribute

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(self).attribute(self.__name__, name)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, package: str, attribute: Attribute) -> None:
        self.prefix = package + "."
        self.module_type = type("StubModule", (_StubModule,), {"attribute": staticmethod(attribute)})

    def find_spec(self, fullname: str, path: object, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.startswith(self.prefix):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = self.module_type(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install(package: str, attribute: Attribute) -> None:
    """Make every submodule of ``package`` import as a stand-in (``package`` itself is the caller's module)."""
    sys.meta_path.insert(0, _Finder(package, attribute))
