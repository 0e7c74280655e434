"""The ``memory`` profiler's options (``options: {memory: {...}}`` in a profile spec), validated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from profwin.plugin import ConfigError, unknown_key

__all__ = ["DEFAULT_MAX_ENTRIES", "MemoryOptions", "parse_options"]

DEFAULT_MAX_ENTRIES = 100_000
"""Ring-buffer size of the CUDA allocator history. torch's own default is unbounded, and each
entry costs several KB, so profwin always passes a bound (verl and SGLang use the same number)."""

_CONTEXTS = ("state", "alloc", "all", None)
_STACKS = ("python", "all")
_FORMATS = ("json", "json.gz")
_TIMELINES = ("events", "steps")
_KEYS = ("max_entries", "context", "stacks", "format", "timeline", "top_ops")


@dataclass(frozen=True)
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

    max_entries: int = DEFAULT_MAX_ENTRIES
    context: Literal["state", "alloc", "all"] | None = "all"
    stacks: Literal["python", "all"] = "python"
    format: Literal["json", "json.gz"] = "json"
    timeline: Literal["events", "steps"] = "events"
    top_ops: int = 10


def _positive_int(value: object, key: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"must be an int >= {minimum} (got {value!r})", path=f"options.memory.{key}")
    return value


def _one_of(value: object, key: str, choices: tuple[object, ...]) -> Any:
    if value not in choices:
        raise ConfigError(f"must be one of {list(choices)} (got {value!r})", path=f"options.memory.{key}")
    return value


def parse_options(options: Mapping[str, Any]) -> MemoryOptions:
    """Validate ``spec.plugin_options("memory")``; errors name ``options.memory.<key>``."""
    for key in options:
        if key not in _KEYS:
            raise unknown_key(key, _KEYS, path="options.memory")
    default = MemoryOptions()
    return MemoryOptions(
        max_entries=_positive_int(options.get("max_entries", default.max_entries), "max_entries", minimum=1),
        context=_one_of(options.get("context", default.context), "context", _CONTEXTS),
        stacks=_one_of(options.get("stacks", default.stacks), "stacks", _STACKS),
        format=_one_of(options.get("format", default.format), "format", _FORMATS),
        timeline=_one_of(options.get("timeline", default.timeline), "timeline", _TIMELINES),
        top_ops=_positive_int(options.get("top_ops", default.top_ops), "top_ops", minimum=0),
    )
