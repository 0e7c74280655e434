"""Entry point of the profwin-memory plugin: a description only, so listing plugins stays cheap."""

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="memory",
    kind="profiler",
    target="profwin_memory.profiler:MemoryProfiler",
    requires=("torch",),
    install_hint="profwin-memory[engine] (or any torch build)",
    summary="memory over exactly the window: CUDA allocator snapshot (memory_viz) or a CPU memory timeline",
)
