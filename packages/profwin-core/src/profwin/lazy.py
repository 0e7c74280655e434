"""Package roots that import their public names on first use (PEP 562), written once for core and the plugins.

How it works, and why: docs/internals.md, ``profwin.lazy``.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from profwin.arguments import checked

__all__ = ["lazy_exports"]


class _KeepExports(types.ModuleType):
    """A package whose exported names include submodules' names: importing such a submodule
    binds the package's attribute to it; here the exported name is kept instead (the
    submodule stays in ``sys.modules``)."""

    _kept_exports: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._kept_exports and isinstance(value, types.ModuleType) and value.__name__ == f"{self.__name__}.{name}":
            return
        super().__setattr__(name, value)


@checked
def lazy_exports(package: str, homes: Mapping[str, Iterable[str]]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package ``package`` (call it from the root
    itself, with ``__name__``): each name of ``homes`` (module -> names, ``"public=source"``
    for a rename) is imported from its module when first read. Other names are an ``AttributeError``."""
    where: dict[str, tuple[str, str]] = {}
    for home, names in homes.items():
        for entry in names:
            public, _, source = entry.partition("=")
            where[public] = (home, source or public)
    module = sys.modules[package]
    namespace = vars(module)

    def __getattr__(name: str) -> Any:
        found = where.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(found[0]), found[1])
        namespace[name] = value  # into the module's dict: read without __getattr__ from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    kept = frozenset(name for name, (home, _) in where.items() if home == f"{package}.{name}")
    if kept:
        module.__class__ = _KeepExports
        namespace["_kept_exports"] = kept
    return __getattr__, __dir__
