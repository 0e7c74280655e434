"""profwin-slime's entry point (``profwin.trainers``): listed by ``profwin plugins``, imports nothing heavy."""

from __future__ import annotations

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="slime",
    kind="trainer",
    target="profwin_slime.rollout:generate_rollout",
    requires=("slime",),
    install_hint="slime from its repository (github.com/THUDM/slime); profwin-slime runs in its RolloutManager",
    summary="slime: --rollout-function-path profwin_slime.generate_rollout profiles chosen rollouts on the router's SGLang workers",
)
