"""Importing this module runs :func:`profwin_verl.patch`: the one-line adoption for verl.

verl imports every module named in ``VERL_USE_EXTERNAL_MODULES`` when it is itself imported, in
every process (trainer, Ray workers, rollout servers), so::

    VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch python -m verl.trainer.main_ppo ...

puts profwin's builders and relocation in place before verl's rollout servers import them.

An exception here would fail ``import verl`` itself (verl does not catch what its external
modules raise), and with it every verl process. So a verl that :func:`~profwin_verl.patch`
refuses (another release series, or verl's functions missing) gets one warning naming the
reason and stays unpatched: verl runs exactly as without profwin. ``patch()`` called directly
still raises.
"""

from __future__ import annotations

import warnings

from profwin.plugin import PluginError
from profwin_verl.patch import patch

__all__ = ["PATCHED", "REFUSED"]

PATCHED: list[str] = []
"""What this import swapped (``module.name`` each), empty when verl was left alone."""

REFUSED = ""
"""Why verl was left unpatched, or ``""``."""

try:
    PATCHED = patch()
except Exception as exc:  # whatever went wrong, verl must still import
    REFUSED = str(exc) if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
    warnings.warn(
        f"{__name__} left verl unpatched (verl's own rollout profiling stays in place): {REFUSED}",
        RuntimeWarning,
        stacklevel=2,
    )
