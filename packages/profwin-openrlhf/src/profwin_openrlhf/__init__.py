"""profwin for OpenRLHF: its vLLM engines (Ray actors) profiled for the chosen rollouts, an exact
window of engine steps each.

::

    python -m profwin_openrlhf.train_ppo_ray --profwin.rollouts 1 --profwin.spec 2:6 \\
        <OpenRLHF's own flags, as for python -m openrlhf.cli.train_ppo_ray>

- :func:`enable` (what the launcher calls): each engine actor gets vLLM's ``profiler_config`` for
  the vLLM in that actor; ``SamplesGenerator.generate_samples`` opens one session on every engine
  around each chosen rollout, wherever it runs;
- :class:`OpenRLHFProfiling`, :func:`split_argv`: the settings (``--profwin.rollouts``,
  ``--profwin.spec``);
- :func:`runtime_env`: for a driver that starts Ray itself;
- :func:`records`: what profiling did around each profiled rollout in this process.

Importable without OpenRLHF, Ray or vLLM (docs/integrations/openrlhf.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin_openrlhf.actor import ACTOR_METHOD
    from profwin_openrlhf.config import DEFAULT_OUTPUT_DIR, ENV, OpenRLHFProfiling, split_argv
    from profwin_openrlhf.generator import records
    from profwin_openrlhf.patch import SUPPORTED_OPENRLHF, check_openrlhf, enable, runtime_env

__all__ = [
    "ACTOR_METHOD",
    "DEFAULT_OUTPUT_DIR",
    "ENV",
    "SUPPORTED_OPENRLHF",
    "OpenRLHFProfiling",
    "check_openrlhf",
    "enable",
    "records",
    "runtime_env",
    "split_argv",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin_openrlhf.actor": ("ACTOR_METHOD",),
        "profwin_openrlhf.config": ("DEFAULT_OUTPUT_DIR", "ENV", "OpenRLHFProfiling", "split_argv"),
        "profwin_openrlhf.generator": ("records",),
        "profwin_openrlhf.patch": ("SUPPORTED_OPENRLHF", "check_openrlhf", "enable", "runtime_env"),
    },
)
