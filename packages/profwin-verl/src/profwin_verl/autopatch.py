"""Importing this module runs :func:`profwin_verl.enable`: the one-line adoption for verl.

verl imports every module named in ``VERL_USE_EXTERNAL_MODULES`` when it is itself imported, in
every process (trainer, Ray workers, rollout servers), so::

    VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch python -m verl.trainer.main_ppo ...

puts profwin's builders and relocation in place before verl's rollout servers import them.

An exception here would fail ``import verl`` itself (verl does not catch what its external
modules raise), and with it every verl process; ``enable`` never raises (core's policy for every
trainer): a verl it refuses (another release series, or verl's functions missing) gets one
warning naming the reason and stays unpatched: verl runs exactly as without profwin.
"""

from __future__ import annotations

from profwin_verl.seam import enable

__all__ = ["PATCHED"]

PATCHED: list[str] = enable()
"""What this import put in place (``module.name`` each), empty when verl was left alone."""
