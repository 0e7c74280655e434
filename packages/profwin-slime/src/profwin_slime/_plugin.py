"""profwin-slime's entry point (``profwin.trainers``): listed by ``profwin plugins``, imports nothing heavy."""

from __future__ import annotations

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="slime",
    kind="trainer",
    target="profwin_slime.seam:INTEGRATION",
    # Read from slime's source at commit 624b824 (2026-08-21), which calls itself 0.3.1.
    requires=("slime>=0.3.1,<0.4",),
    install_hint="slime from its repository (github.com/THUDM/slime: pip install -e .); profwin-slime runs in its RolloutManager",
    summary="slime: --rollout-function-path profwin_slime.generate_rollout profiles chosen rollouts on the router's SGLang workers",
)
