"""Entry point of the profwin-npu plugin: a description only, so listing plugins stays cheap."""

from profwin import PluginSpec

PLUGIN = PluginSpec(
    name="npu",
    kind="profiler",
    target="profwin_npu:NpuProfiler",
    requires=("torch", "torch_npu"),
    install_hint="profwin-npu[engine]",
    summary="(work in progress)",
)
