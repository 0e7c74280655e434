"""Deprecated path of :mod:`profwin_verl.autopatch`, kept for ``VERL_USE_EXTERNAL_MODULES``.

``VERL_USE_EXTERNAL_MODULES=profwin.verl.autopatch`` keeps patching verl until profwin-core 0.2
(importing :mod:`profwin.verl` warns once); set ``profwin_verl.autopatch`` instead.
"""

from __future__ import annotations

import profwin_verl.autopatch  # noqa: F401  (importing it patches verl)
