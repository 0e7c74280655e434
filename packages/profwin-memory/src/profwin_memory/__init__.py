"""profwin-memory: memory over exactly a window of steps.

On a CUDA machine, the caching allocator's history for the window as a snapshot that opens in
pytorch.org/memory_viz; elsewhere, a compact CPU memory timeline of the window. Used through
``profwin.Session(spec, profiler="memory")``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin_memory.cpu_timeline import TIMELINE_FORMAT, build_timeline
    from profwin_memory.cuda_snapshot import SNAPSHOT_SUFFIX, STEP_METADATA, history_kwargs
    from profwin_memory.options import DEFAULT_MAX_ENTRIES, MemoryOptions, memory_options
    from profwin_memory.profiler import MemoryProfiler, resolve_device
    from profwin_memory.provenance import UntrustedSnapshotError, key_file, sidecar_path, verify
    from profwin_memory.reader import load_snapshot, summarize, summarize_snapshot, summarize_timeline
    from profwin_memory.timeline import MAX_TIMELINE_BYTES, TimelineError, load_timeline

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "MAX_TIMELINE_BYTES",
    "SNAPSHOT_SUFFIX",
    "STEP_METADATA",
    "TIMELINE_FORMAT",
    "MemoryOptions",
    "MemoryProfiler",
    "TimelineError",
    "UntrustedSnapshotError",
    "build_timeline",
    "history_kwargs",
    "key_file",
    "load_snapshot",
    "load_timeline",
    "memory_options",
    "resolve_device",
    "sidecar_path",
    "summarize",
    "summarize_snapshot",
    "summarize_timeline",
    "verify",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin_memory.cpu_timeline": ("TIMELINE_FORMAT", "build_timeline"),
        "profwin_memory.cuda_snapshot": ("SNAPSHOT_SUFFIX", "STEP_METADATA", "history_kwargs"),
        "profwin_memory.options": ("DEFAULT_MAX_ENTRIES", "MemoryOptions", "memory_options"),
        "profwin_memory.profiler": ("MemoryProfiler", "resolve_device"),
        "profwin_memory.provenance": ("UntrustedSnapshotError", "key_file", "sidecar_path", "verify"),
        "profwin_memory.reader": ("load_snapshot", "summarize", "summarize_snapshot", "summarize_timeline"),
        "profwin_memory.timeline": ("MAX_TIMELINE_BYTES", "TimelineError", "load_timeline"),
    },
)
