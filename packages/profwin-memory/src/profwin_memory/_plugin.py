"""Entry point of the profwin-memory plugin: a description only, so listing plugins stays cheap."""

from profwin import PluginSpec

PLUGIN = PluginSpec(
    name="memory",
    kind="profiler",
    target="profwin_memory:MemoryProfiler",
    requires=("torch",),
    install_hint="profwin-memory[engine]",
    summary="(work in progress)",
)
