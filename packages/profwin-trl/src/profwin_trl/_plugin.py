"""profwin-trl's entry point (``profwin.trainers``): listed by ``profwin plugins``, imports nothing heavy."""

from __future__ import annotations

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="trl",
    kind="trainer",
    target="profwin_trl.patch:enable",
    requires=("trl",),
    install_hint="trl>=1.11,<1.17 (pip install 'profwin-trl[engine]'; profwin-trl runs in TRL's training process)",
    summary="TRL: profwin_trl.enable(window, rollouts) profiles its vLLM generation (colocate or trl vllm-serve)",
)
