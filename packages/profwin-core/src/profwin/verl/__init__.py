"""Deprecated: verl's integration is the distribution profwin-verl (import ``profwin_verl``).

This package forwards every name to :mod:`profwin_verl` with a DeprecationWarning, and
``profwin.verl.autopatch`` keeps working for ``VERL_USE_EXTERNAL_MODULES``, until profwin-core
0.2 (it moved during 0.1's development, before any release). Kept because that variable lives in job scripts and cluster configs that outlive an
upgrade, and verl fails to start when it cannot import the module it names. Install
``profwin-verl`` (or ``profwin[verl]``) for it to work.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

_MOVED = "profwin.verl is now the distribution profwin-verl: import profwin_verl (the old path goes away in profwin-core 0.2)"


def _target() -> Any:
    try:
        return importlib.import_module("profwin_verl")
    except ModuleNotFoundError as exc:
        if exc.name != "profwin_verl":
            raise
        raise ModuleNotFoundError(
            "profwin.verl moved to the profwin-verl distribution: pip install profwin-verl (or 'profwin[verl]')",
            name="profwin_verl",
        ) from None


warnings.warn(_MOVED, DeprecationWarning, stacklevel=2)
_verl = _target()
__all__ = list(_verl.__all__)
# `import profwin.verl.config` (and the other submodules) finds profwin_verl's own module, by its new name.
for _sub, _new in (("builders", "builders"), ("config", "settings"), ("patch", "seam"), ("rollout", "traces")):
    sys.modules.setdefault(f"{__name__}.{_sub}", importlib.import_module(f"profwin_verl.{_new}"))


def __getattr__(name: str) -> Any:
    """Every name of :mod:`profwin_verl` (and its submodules ``config``, ``builders``, ...)."""
    try:
        return getattr(_verl, name)
    except AttributeError:
        try:
            return importlib.import_module(f"profwin_verl.{name}")
        except ModuleNotFoundError:
            raise AttributeError(f"module 'profwin.verl' has no attribute {name!r}") from None
