"""Which of a spec's activities a profiler or engine can record: one resolver for all of them.

Each caller says what it knows — the activities to use when the spec leaves them unset, why an
activity cannot be recorded here (a CPU-only machine, a ``--device cpu`` server), and which it
never records (``npu`` is the ``npu`` profiler's) — and the resolver applies the spec's
``on_unavailable`` the same way everywhere: an error naming the activity and the reason, or a
warning and the activity dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from profwin.arguments import checked
from profwin.arguments import warn as warn_user
from profwin.errors import ConfigError
from profwin.spec import ProfileSpec

__all__ = ["resolve_activities"]


@checked
def resolve_activities(
    spec: ProfileSpec,
    *,
    default: Sequence[str],
    unavailable: Mapping[str, str] | None = None,
    refused: Mapping[str, str] | None = None,
    warn: bool = True,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(kept, dropped)``: the activities to record and those dropped (``"name (why)"``).

    Args:
        spec: its ``activities`` (``None``: use ``default``) and ``on_unavailable``.
        default: what to record when the spec does not say.
        unavailable: activity -> why it cannot be recorded here; subject to ``on_unavailable``.
        refused: activity -> why this profiler never records it; always an error.
        warn: warn for each dropped activity (``False``: the caller reports ``dropped`` itself).
    """
    unavailable = unavailable or {}
    refused = refused or {}
    wanted = list(default) if spec.activities is None else list(spec.activities)
    kept: list[str] = []
    dropped: list[str] = []
    for i, activity in enumerate(wanted):
        path = "activities" if spec.activities is None else f"activities[{i}]"
        if activity in refused:
            raise ConfigError(f"{activity!r} {refused[activity]}", path=path)
        why = unavailable.get(activity)
        if why is None:
            if activity not in kept:
                kept.append(activity)
            continue
        if spec.on_unavailable == "error":
            raise ConfigError(f"{activity!r} cannot be recorded: {why}; remove it or set on_unavailable: drop", path=path)
        if warn:
            warn_user(f"profwin: dropping activity {activity!r}: {why}")
        dropped.append(f"{activity} ({why})")
    if not kept:
        raise ConfigError(f"none of {wanted} can be recorded here ({'; '.join(dropped)})", path="activities")
    return tuple(kept), tuple(dropped)
