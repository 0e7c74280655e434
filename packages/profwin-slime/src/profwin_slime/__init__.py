"""profwin as slime's rollout function: profile the chosen rollouts on the SGLang workers behind
slime's router, then run the rollout function slime would have run.

::

    python train.py ... \\
        --rollout-function-path profwin_slime.generate_rollout \\
        --custom-config-path profwin.yaml        # profwin_rollouts: "1,3", profwin_spec: "20:80"

- :func:`generate_rollout`: slime's rollout-function signature ``(args, rollout_id, data_source,
  evaluation=False)``; slime loading it is the switch;
- :func:`enable` / :func:`disable`: the same verb pair as every trainer integration (settings of
  your own instead of ``args``'s; the rollout function only calling the wrapped one);
- :class:`SlimeProfiling` and :func:`add_arguments`: the ``profwin_*`` settings read from slime's
  ``args`` (``--custom-config-path`` YAML keys, or flags of your own entry point);
- :func:`records`: what profiling did around each profiled rollout in this process.

Importable without slime or any engine (docs/integrations/slime.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin_slime.seam import INTEGRATION, disable, enable, generate_rollout, records
    from profwin_slime.settings import DEFAULT_ROLLOUT_FUNCTION, SlimeProfiling, add_arguments

__all__ = [
    "DEFAULT_ROLLOUT_FUNCTION",
    "INTEGRATION",
    "SlimeProfiling",
    "add_arguments",
    "disable",
    "enable",
    "generate_rollout",
    "records",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin_slime.seam": ("INTEGRATION", "disable", "enable", "generate_rollout", "records"),
        "profwin_slime.settings": ("DEFAULT_ROLLOUT_FUNCTION", "SlimeProfiling", "add_arguments"),
    },
)
