"""profwin-openrlhf's entry point (``profwin.trainers``): listed by ``profwin plugins``, imports nothing heavy."""

from __future__ import annotations

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="openrlhf",
    kind="trainer",
    target="profwin_openrlhf.seam:INTEGRATION",
    # Written against 0.11.2's RolloutRayActor, create_vllm_engines and SamplesGenerator.
    requires=("openrlhf>=0.11,<0.12",),
    install_hint="OpenRLHF in its own environment (profwin-openrlhf runs in OpenRLHF's driver and Ray workers)",
    summary="OpenRLHF: python -m profwin_openrlhf.train_ppo_ray --profwin.rollouts R --profwin.spec W profiles its vLLM Ray actors",
)
