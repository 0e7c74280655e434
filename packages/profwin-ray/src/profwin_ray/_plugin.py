"""profwin-ray's entry point (``profwin.clusters``): listed by ``profwin plugins``, imports nothing heavy."""

from __future__ import annotations

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="ray",
    kind="cluster",
    target="profwin_ray:RayCluster",
    requires=("ray>=2.41",),
    install_hint="profwin[ray]",
    summary="a session's files from every Ray node (profwin collect --ray), summaries where the traces are",
)
