"""Importing this module runs :func:`profwin_verl.patch`: the one-line adoption for verl.

verl imports every module named in ``VERL_USE_EXTERNAL_MODULES`` when it is itself imported, in
every process (trainer, Ray workers, rollout servers), so::

    VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch python -m verl.trainer.main_ppo ...

puts profwin's builders and relocation in place before verl's rollout servers import them.
"""

from __future__ import annotations

from profwin_verl.patch import patch

patch()
