"""profwin for OpenRLHF: its vLLM engines (Ray actors) profiled for the chosen rollouts, an exact
window of engine steps each.

::

    python -m profwin_openrlhf.train_ppo_ray --profwin.rollouts 1 --profwin.spec 2:6 \\
        <OpenRLHF's own flags, as for python -m openrlhf.cli.train_ppo_ray>

- :func:`enable` / :func:`disable` (the launcher calls ``enable``): each engine actor gets vLLM's
  ``profiler_config`` for the vLLM in that actor; ``SamplesGenerator.generate_samples`` opens one
  session on every engine around each chosen rollout, wherever it runs; an OpenRLHF outside the
  supported releases gets one warning and runs unprofiled;
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
    from profwin_openrlhf.seam import INTEGRATION, disable, enable, records, runtime_env
    from profwin_openrlhf.settings import ENV, OpenRLHFProfiling, split_argv

__all__ = [
    "ACTOR_METHOD",
    "ENV",
    "INTEGRATION",
    "OpenRLHFProfiling",
    "disable",
    "enable",
    "records",
    "runtime_env",
    "split_argv",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin_openrlhf.actor": ("ACTOR_METHOD",),
        "profwin_openrlhf.seam": ("INTEGRATION", "disable", "enable", "records", "runtime_env"),
        "profwin_openrlhf.settings": ("ENV", "OpenRLHFProfiling", "split_argv"),
    },
)
