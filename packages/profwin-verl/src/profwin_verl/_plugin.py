"""profwin-verl's trainer entry point (``profwin.trainers``): listed by ``profwin plugins``, imports nothing heavy."""

from __future__ import annotations

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="verl",
    kind="trainer",
    target="profwin_verl.seam:INTEGRATION",
    # The functions swapped have verl 0.9.1's signatures.
    requires=("verl>=0.9,<0.10",),
    install_hint="profwin-verl[engine]",
    summary="verl 0.9: exact rollout windows in verl's own builders (VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch)",
)
