"""profwin for TRL: its vLLM generation profiled for the chosen generation calls, an exact window
of engine steps each.

::

    import profwin_trl

    profwin_trl.enable(profwin_trl.TRLProfiling(rollouts=1, spec="2:6"))  # before the trainer is built

- :func:`enable` / :func:`disable`: colocate mode's in-process ``vllm.LLM`` gets vLLM's
  ``profiler_config`` for the vLLM in this process, and ``VLLMGeneration.generate`` opens one
  session around each chosen call (on the colocated engine, or on the ``trl vllm-serve`` server
  TRL talks to); a TRL outside the supported releases gets one warning and runs unprofiled;
- :class:`TRLProfiling`: the settings;
- :func:`records`: what profiling did around each profiled generation in this process.

Importable without TRL or vLLM (docs/integrations/trl.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin_trl.seam import INTEGRATION, disable, enable, records
    from profwin_trl.settings import TRLProfiling

__all__ = ["INTEGRATION", "TRLProfiling", "disable", "enable", "records"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"profwin_trl.seam": ("INTEGRATION", "disable", "enable", "records"), "profwin_trl.settings": ("TRLProfiling",)},
)
