"""The entry point: a description only, so listing plugins stays cheap."""

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="toy",
    kind="backend",
    target="profwin_toy.backend:ToyBackend",
    summary="toyserve: the example engine of docs/plugins.md",
)
