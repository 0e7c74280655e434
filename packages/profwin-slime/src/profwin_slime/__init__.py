"""profwin as slime's rollout function: profile the chosen rollouts on the SGLang workers behind
slime's router, then run the rollout function slime would have run.

::

    python train.py ... \\
        --rollout-function-path profwin_slime.generate_rollout \\
        --custom-config-path profwin.yaml        # profwin_rollouts: "1,3", profwin_spec: "20:80"

- :func:`generate_rollout`: slime's rollout-function signature ``(args, rollout_id, data_source,
  evaluation=False)``;
- :class:`SlimeProfiling` and :func:`add_arguments`: the ``profwin_*`` settings read from slime's
  ``args`` (``--custom-config-path`` YAML keys, or flags of your own entry point);
- :func:`records`: what profiling did around each profiled rollout in this process.

Importable without slime or any engine (docs/integrations/slime.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin_slime.config import DEFAULT_OUTPUT_DIR, DEFAULT_ROLLOUT_FUNCTION, SLIME_COMMIT, SlimeProfiling, add_arguments
    from profwin_slime.rollout import generate_rollout, records

__all__ = [
    "DEFAULT_OUTPUT_DIR",
    "DEFAULT_ROLLOUT_FUNCTION",
    "SLIME_COMMIT",
    "SlimeProfiling",
    "add_arguments",
    "generate_rollout",
    "records",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin_slime.config": (
            "DEFAULT_OUTPUT_DIR",
            "DEFAULT_ROLLOUT_FUNCTION",
            "SLIME_COMMIT",
            "SlimeProfiling",
            "add_arguments",
        ),
        "profwin_slime.rollout": ("generate_rollout", "records"),
    },
)
