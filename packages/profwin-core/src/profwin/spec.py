"""The profile spec: which window, what to record, where to write it, and which ranks profile."""

from __future__ import annotations

import itertools
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from attrs import evolve, field, frozen

from profwin.errors import ConfigError, shown
from profwin.inputs import expand_user
from profwin.window import MAX_STEP, Window

__all__ = ["ACTIVITIES", "PART_EVENTS", "PART_STEPS", "RECORD_OPTIONS", "ProfileSpec", "RankSelection", "as_spec"]

ACTIVITIES: tuple[str, ...] = ("cpu", "cuda", "npu", "xpu")
"""Activities a spec may ask for; ``None`` in a spec means "CPU plus the accelerator present"."""

RECORD_OPTIONS: tuple[str, ...] = ("shapes", "stack", "memory", "flops", "modules", "timeline")
"""What a spec may record besides timings, each a bool field of :class:`ProfileSpec`: the first
five are the profiler's own settings; ``timeline`` is the session timeline
(:mod:`profwin.runtime.timeline_record`), a few numbers per step for the whole session, beside the trace."""

PART_STEPS = 1000
"""Default :attr:`ProfileSpec.part_steps`: the most steps one part trace of a long window holds."""
PART_EVENTS = 250_000
"""Default :attr:`ProfileSpec.part_events`: about the events one part trace holds at most.
torch.profiler holds ~150 bytes an event while recording and ~1-3 KB while it stops and exports
(CPU torch 2.13, measured in docs/limits.md), so a part of this many events peaks under ~1 GB."""

RankSelection = Literal["all"] | tuple[int, ...]

# vLLM's rule for profile_prefix, the strictest of the engines: every backend can use it as is.
_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


_MAX_ACTIVITY_ITEMS = 64
"""The most items of ``activities`` read (repeats are allowed): an iterable without end, or of
10**18 items, is refused rather than read until memory or patience runs out."""


def _to_activities(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value  # a bare string is rejected by the validator
    if not isinstance(value, Iterable):
        return value  # rejected by the validator with the value shown
    items = tuple(itertools.islice(value, _MAX_ACTIVITY_ITEMS + 1))
    if len(items) > _MAX_ACTIVITY_ITEMS:
        raise ConfigError(f"must list at most {_MAX_ACTIVITY_ITEMS} activities (got {shown(value)})", path="activities")
    if not all(isinstance(item, str) for item in items):
        return items  # rejected by the validator, naming the item
    return tuple(sorted(set(items), key=lambda a: ACTIVITIES.index(a) if a in ACTIVITIES else len(ACTIVITIES)))


def _check_activities(_: object, __: object, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str) or not isinstance(value, tuple):
        raise ConfigError(
            f"activities must be a list drawn from {list(ACTIVITIES)} or None (got {shown(value)})", path="activities"
        )
    if not value:
        raise ConfigError("activities must not be empty; leave it unset for CPU plus the accelerator present", path="activities")
    for i, item in enumerate(value):
        if item not in ACTIVITIES:
            raise ConfigError(f"must be one of {list(ACTIVITIES)} (got {shown(item)})", path=f"activities[{i}]")


def _check_bool(instance: object, attribute: Any, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false (got {shown(value)})", path=attribute.name)


def _to_path(value: str | os.PathLike[str]) -> Path:
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise ConfigError(f"must be a non-empty path (got {shown(value)})", path="output_dir")
    return expand_user(value, what="output_dir").absolute()


def _check_prefix(_: object, __: object, value: object) -> None:
    if not isinstance(value, str) or not _PREFIX.fullmatch(value):
        raise ConfigError(
            f"must be 1-128 characters of [A-Za-z0-9._-] starting with a letter or digit (got {shown(value)})",
            path="prefix",
        )


def _to_ranks(value: object) -> Any:
    if isinstance(value, bool):
        return value  # rejected by the validator with the value shown
    if isinstance(value, int):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return value


def _check_ranks(_: object, __: object, value: object) -> None:
    if value == "all":
        return
    if not isinstance(value, tuple) or not value:
        raise ConfigError(f"must be 'all', a rank, or a non-empty list of ranks (got {shown(value)})", path="ranks")
    for i, rank in enumerate(value):
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise ConfigError(f"must be a non-negative int (got {shown(rank)})", path=f"ranks[{i}]")


def _to_options(value: object) -> Any:
    if not isinstance(value, Mapping):
        return value
    return MappingProxyType({k: MappingProxyType(dict(v)) if isinstance(v, Mapping) else v for k, v in value.items()})


def _check_options(_: object, __: object, value: object) -> None:
    if not isinstance(value, Mapping):
        raise ConfigError(f"must map a plugin name to its options (got {shown(value)})", path="options")
    for name, opts in value.items():
        if not isinstance(name, str):
            raise ConfigError(f"plugin names are strings, such as 'vllm' (got {shown(name)})", path="options")
        if not isinstance(opts, Mapping):
            raise ConfigError(
                f"must be a mapping of options for plugin {shown(name)} (got {shown(opts)})", path=f"options.{name}"
            )
        for key in opts:
            if not isinstance(key, str):
                raise ConfigError(f"option names are strings (got {shown(key)})", path=f"options.{name}")


def _check_window(_: object, __: object, value: object) -> None:
    if not isinstance(value, Window):
        raise ConfigError(f"must be a profwin.Window (got {shown(value)}); use Window.parse('20:80')", path="window")


def _check_part_bound(_: object, attribute: Any, value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEP:
        raise ConfigError(f"must be None (no bound) or an int in [1, {MAX_STEP}] (got {shown(value)})", path=attribute.name)


def _check_unavailable(_: object, __: object, value: object) -> None:
    if value not in ("error", "drop"):
        raise ConfigError(f"must be 'error' or 'drop' (got {shown(value)})", path="on_unavailable")


@frozen(kw_only=True)
class ProfileSpec:
    """Everything a backend or profiler needs to profile one window.

    Attributes:
        window: the steps to record, counted from the session start.
        activities: ``cpu``/``cuda``/``npu``/``xpu``; ``None`` means CPU plus the accelerator
            present at run time.
        shapes, stack, memory, flops, modules: what the profiler records besides timings.
        timeline: also record the session timeline (:mod:`profwin.runtime.timeline_record`): each step's
            batch, tokens and time and each request's lifespan, for the whole session (start to
            stop, not only the window), written beside the window's trace.
        output_dir: where traces go; made absolute at construction, created by
            :meth:`prepare_output_dir` before profiling starts.
        prefix: file-name prefix, 1-128 chars of ``[A-Za-z0-9._-]`` (vLLM's rule).
        ranks: ``"all"``, or the ranks that profile (default rank 0 only).
        options: per-plugin options (``{"npu": {"level": "level1"}}``), validated by each plugin.
        on_unavailable: an activity the machine cannot record is an ``"error"`` (default) or is
            dropped with a warning (``"drop"``).
        part_steps: a window longer than this is written as consecutive part traces of at most
            this many steps each, by profilers that write parts (``torch``, ``npu``); ``None``:
            no step bound. Default :data:`PART_STEPS`.
        part_events: a part also closes early when the events it would hold pass this many,
            judged from the events per step of the parts already written (torch.profiler cannot
            count events while it records, so the first part is bounded by ``part_steps`` only);
            ``None``: no event bound. Default :data:`PART_EVENTS`.
    """

    window: Window = field(factory=Window, validator=_check_window)
    activities: tuple[str, ...] | None = field(default=None, converter=_to_activities, validator=_check_activities)
    shapes: bool = field(default=False, validator=_check_bool)
    stack: bool = field(default=False, validator=_check_bool)
    memory: bool = field(default=False, validator=_check_bool)
    flops: bool = field(default=False, validator=_check_bool)
    modules: bool = field(default=False, validator=_check_bool)
    timeline: bool = field(default=False, validator=_check_bool)
    output_dir: Path = field(default=Path("profwin-traces"), converter=_to_path)
    prefix: str = field(default="profwin", validator=_check_prefix)
    ranks: RankSelection = field(default=(0,), converter=_to_ranks, validator=_check_ranks)
    options: Mapping[str, Mapping[str, Any]] = field(factory=dict, converter=_to_options, validator=_check_options, hash=False)
    on_unavailable: Literal["error", "drop"] = field(default="error", validator=_check_unavailable)
    part_steps: int | None = field(default=PART_STEPS, validator=_check_part_bound)
    part_events: int | None = field(default=PART_EVENTS, validator=_check_part_bound)

    def profiles_rank(self, rank: int) -> bool:
        """Whether the process with this rank records anything."""
        return self.ranks == "all" or rank in self.ranks

    def records(self) -> tuple[str, ...]:
        """The record options that are on, in :data:`RECORD_OPTIONS` order."""
        return tuple(name for name in RECORD_OPTIONS if getattr(self, name))

    def plugin_options(self, name: str) -> Mapping[str, Any]:
        """The options given for plugin ``name`` (empty if none)."""
        return self.options.get(name, MappingProxyType({}))

    def replace(self, **changes: Any) -> ProfileSpec:
        """A copy with some fields changed, validated like a new spec."""
        return evolve(self, **changes)

    def prepare_output_dir(self) -> Path:
        """Create ``output_dir`` if needed and prove it writable, before any profiling starts."""
        try:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.output_dir, prefix=".profwin-write-check-"):
                pass
        except OSError as exc:
            raise ConfigError(
                f"must be a writable directory (got {str(self.output_dir)!r}: {exc.strerror or exc})",
                path="output_dir",
            ) from None
        return self.output_dir


def as_spec(spec: ProfileSpec | Window | str) -> ProfileSpec:
    """A spec from a spec, a :class:`Window` or text like ``"20:80"``."""
    if isinstance(spec, str):
        return ProfileSpec(window=Window.parse(spec))
    if isinstance(spec, Window):
        return ProfileSpec(window=spec)
    if not isinstance(spec, ProfileSpec):
        raise ConfigError(f"must be a ProfileSpec, a Window or text like '20:80' (got {shown(spec)})", path="spec")
    return spec
