"""profwin-trl's entry point (``profwin.trainers``): listed by ``profwin plugins``, imports nothing heavy."""

from __future__ import annotations

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="trl",
    kind="trainer",
    target="profwin_trl.seam:INTEGRATION",
    # From 1.11 `trl vllm-serve` is vLLM's own server and VLLMGeneration builds its LLM the same
    # way; checked to 1.16.
    requires=("trl>=1.11,<1.17",),
    install_hint="profwin-trl[engine] in TRL's training process (profwin-trl runs there)",
    summary="TRL: profwin_trl.enable(TRLProfiling(rollouts=R, spec=W)) profiles its vLLM generation (colocate or trl vllm-serve)",
)
