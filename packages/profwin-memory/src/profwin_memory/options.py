"""The ``memory`` profiler's options (``options: {memory: {...}}`` in a profile spec), validated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from attrs import field, frozen

from profwin.plugin import ProfileSpec, at_least, checked, choice
from profwin.plugin import parse_options as parse_plugin_options

__all__ = ["DEFAULT_MAX_ENTRIES", "MemoryOptions", "memory_options"]

DEFAULT_MAX_ENTRIES = 100_000
"""Ring-buffer size of the CUDA allocator history. torch's own default is unbounded, and each
entry costs several KB, so profwin always passes a bound (verl and SGLang use the same number)."""


@frozen(kw_only=True)
class MemoryOptions:
    """What the ``memory`` profiler records, beyond the window.

    Attributes:
        max_entries: CUDA: size of the allocator's event ring buffer (older events are dropped).
        context: CUDA: which events carry a traceback: ``state`` (live blocks only), ``alloc``
            (+ allocation events), ``all`` (+ frees), or ``None`` (no tracebacks).
        stacks: CUDA: ``python`` frames only, or ``all`` (+ C++ frames; slower to dump).
        format: CPU timeline file: ``json`` or ``json.gz``.
        timeline: CPU timeline detail: ``events`` (every allocation and free, with the live
            total after it) or ``steps`` (per-step totals only).
        top_ops: CPU timeline: how many of the ops that allocated the most bytes to list.
    """

    max_entries: int = field(default=DEFAULT_MAX_ENTRIES, validator=at_least(1))
    context: Literal["state", "alloc", "all"] | None = field(default="all", validator=choice("state", "alloc", "all", None))
    stacks: Literal["python", "all"] = field(default="python", validator=choice("python", "all"))
    format: Literal["json", "json.gz"] = field(default="json", validator=choice("json", "json.gz"))
    timeline: Literal["events", "steps"] = field(default="events", validator=choice("events", "steps"))
    top_ops: int = field(default=10, validator=at_least(0))


@checked
def memory_options(source: ProfileSpec | Mapping[str, Any]) -> MemoryOptions:
    """``options.memory`` of a spec (or that mapping), validated by core's ``parse_options``;
    errors name ``options.memory.<key>``."""
    return parse_plugin_options(MemoryOptions, source, "memory")
