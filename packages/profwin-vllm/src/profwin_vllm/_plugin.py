"""Entry point of the profwin-vllm plugin: a description only, so listing plugins stays cheap."""

from profwin import PluginSpec

PLUGIN = PluginSpec(
    name="vllm",
    kind="backend",
    target="profwin_vllm:VllmBackend",
    requires=(),
    install_hint="profwin-vllm[engine]",
    summary="(work in progress)",
)
