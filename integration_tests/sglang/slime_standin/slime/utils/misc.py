"""slime/utils/misc.py at 624b824: ``load_function``, as slime loads ``--rollout-function-path``."""

from __future__ import annotations

import importlib
from typing import Any


def load_function(path: str) -> Any:
    """Load a function from a module, e.g. "module.submodule.function"."""
    module_path, _, attr = path.rpartition(".")
    module = importlib.import_module(module_path)
    return getattr(module, attr)
