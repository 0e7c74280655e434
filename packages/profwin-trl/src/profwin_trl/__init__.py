"""profwin for TRL: its vLLM generation profiled for the chosen generation calls, an exact window
of engine steps each.

::

    import profwin_trl

    profwin_trl.enable("2:6", rollouts=1)  # before the trainer is built

- :func:`enable`: colocate mode's in-process ``vllm.LLM`` gets vLLM's ``profiler_config`` for the
  vLLM in this process, and ``VLLMGeneration.generate`` opens one session around each chosen call
  (on the colocated engine, or on the ``trl vllm-serve`` server TRL talks to);
- :func:`check_trl`: whether the installed TRL is one profwin-trl supports;
- :func:`records`: what profiling did around each profiled generation in this process.

Importable without TRL or vLLM (docs/integrations/trl.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin_trl.patch import DEFAULT_TIMEOUT, SUPPORTED_TRL, check_trl, enable, records

__all__ = ["DEFAULT_TIMEOUT", "SUPPORTED_TRL", "check_trl", "enable", "records"]

__getattr__, __dir__ = lazy_exports(
    __name__, {"profwin_trl.patch": ("DEFAULT_TIMEOUT", "SUPPORTED_TRL", "check_trl", "enable", "records")}
)
