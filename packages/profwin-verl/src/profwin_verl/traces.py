"""Where verl's rollout engines write traces, which ranks they keep, and moving them into ``save_path``.

Same signatures, return shapes and file layout as verl 0.9.1's functions of the same names in
``verl.utils.profiler.config``; :func:`relocate_rollout_traces` also finishes an exact window the
engine could not record exactly by itself (the trim fallback: see :func:`expect_trim`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from profwin.plugin import ConfigError, Window, WindowWarning, checked, shown, warn
from profwin_traces import TraceError, trim

__all__ = [
    "expect_trim",
    "relocate_rollout_traces",
    "rollout_profiler_global_ranks",
    "rollout_trace_dir",
    "rollout_trace_local_rank",
]

# A trace file names its GPU's tensor-parallel rank: SGLang "-TP-<k>", vLLM "-rank-<k>"/"rank<k>".
_TP_RANK = (re.compile(r"(?:^|[-_.])TP-(\d+)", re.IGNORECASE), re.compile(r"(?:^|[-_.])rank[-_]?(\d+)", re.IGNORECASE))
# With these the GPU's offset in the replica depends on the layout: no guess is made.
_OTHER_PARALLEL = re.compile(r"(?:^|[-_.])(?:DP|PP|EP)-\d+", re.IGNORECASE)
_TRACE_SUFFIXES = (".json", ".json.gz")


def read(config: Any, name: str, default: Any = None) -> Any:
    """A field of a verl config: a dataclass, an OmegaConf node or a plain dict."""
    if isinstance(config, dict):
        return config.get(name, default)
    return getattr(config, name, default)


@checked
def rollout_trace_dir(profiler_config: Any, rank: int) -> str:
    """The directory replica ``rank``'s engine writes to: ``save_path/agent_loop_rollout_replica_{rank}``.
    A ``save_path`` that is not a path (``None``, empty, holding a NUL byte) is a
    :class:`profwin.plugin.ConfigError` naming it, where verl's own raises ``TypeError``."""
    save_path = read(profiler_config, "save_path")
    if not isinstance(save_path, (str, os.PathLike)) or not os.fspath(save_path) or "\0" in os.fspath(save_path):
        raise ConfigError(
            f"must be the folder verl saves profiles in, a non-empty path (got {shown(save_path)})",
            path="profiler_config.save_path",
        )
    return os.path.join(save_path, f"agent_loop_rollout_replica_{rank}")


@checked
def rollout_profiler_global_ranks(profiler_config: Any) -> set[int] | None:
    """The global GPU ranks whose rollout traces to surface, or ``None`` for all (no config,
    ``all_ranks``, or empty ``ranks``)."""
    if profiler_config is None or read(profiler_config, "all_ranks", False):
        return None
    ranks = {int(rank) for rank in read(profiler_config, "ranks", None) or []}
    return ranks or None


@checked
def rollout_trace_local_rank(name: str, world_size: int) -> int | None:
    """The GPU offset (``0..world_size-1``) in its replica that trace file ``name`` belongs to, or
    ``None`` when the name does not say it unambiguously (one GPU, other parallel dimensions, no
    rank in the name, or a rank outside the replica)."""
    if world_size <= 1 or _OTHER_PARALLEL.search(name):
        return None
    for pattern in _TP_RANK:
        match = pattern.search(name)
        if match is not None:
            local = int(match.group(1))
            return local if local < world_size else None
    return None


# Trace directory -> (the steps to keep, counted in the trace; file names already handled).
_TRIMS: dict[str, tuple[Window, set[str]]] = {}


def expect_trim(trace_dir: str, keep: Window | None) -> None:
    """Have each :func:`relocate_rollout_traces` of ``trace_dir`` cut the traces written from now
    on down to steps ``keep`` (counted in each trace); ``None``: no more cutting. Builders call this
    when the engine will record more than the window; verl relocates after every ``stop_profile``."""
    key = os.path.abspath(trace_dir)
    if keep is None:
        _TRIMS.pop(key, None)
    else:
        _TRIMS[key] = (keep, set(_names(key)))


@checked
def relocate_rollout_traces(
    profiler_config: Any, rank: int, world_size: int = 1, keep_global_ranks: Iterable[int] | None = None
) -> list[str]:
    """Finish replica ``rank``'s traces of the session that just stopped: trim them to the window
    when the engine recorded more (see :func:`expect_trim`), then, with ``relocate_results``, move
    them up into ``save_path`` as verl does (``rollout-replica{r}[-globalrank{g}]_<name>``, only
    ``keep_global_ranks`` among the files whose rank is known). Returns the moved files' paths;
    with :data:`DELIVER_ENV` set, their paths on the driver's node after delivering them there."""
    src_dir = rollout_trace_dir(profiler_config, rank)
    _finish_trims(src_dir)
    if not read(profiler_config, "relocate_results", False) or not os.path.isdir(src_dir):
        return []
    keep = None if keep_global_ranks is None else {int(r) for r in keep_global_ranks}
    base = rank * world_size if world_size and world_size > 0 else rank
    moved = []
    for name in sorted(os.listdir(src_dir)):
        local = rollout_trace_local_rank(name, world_size) if world_size else None
        global_rank = None if local is None else base + local
        if keep is not None and global_rank is not None and global_rank not in keep:
            continue  # a tp-mate nobody asked for stays in the sub-directory
        tag = f"rollout-replica{rank}" if global_rank is None else f"rollout-replica{rank}-globalrank{global_rank}"
        target = os.path.join(read(profiler_config, "save_path"), f"{tag}_{name}")
        try:
            shutil.move(os.path.join(src_dir, name), target)
        except OSError as exc:
            print(f"[profwin] rank {rank}: relocating rollout trace {name} failed: {exc}", file=sys.stderr, flush=True)
            continue
        moved.append(target)
    return _deliver(moved, read(profiler_config, "save_path"), rank)


DELIVER_ENV = "PROFWIN_VERL_DELIVER"
"""``ray`` (set on every node) for clusters without a shared disk: after moving a replica's traces
into ``save_path`` on its own node, :func:`relocate_rollout_traces` also copies them into
``save_path`` on the Ray head node, where verl's driver runs, and returns the paths there. Needs
profwin-ray on every node (``pip install "profwin[ray]"``)."""


def _deliver(moved: list[str], save_path: str, rank: int) -> list[str]:
    """``moved``, delivered where :data:`DELIVER_ENV` says. On failure they stay in ``save_path``
    on this node and the replica says why: a relocation never fails the rollout."""
    how = os.environ.get(DELIVER_ENV, "").strip()
    if not moved or not how:
        return moved
    from profwin.plugin import ConfigError, PluginError, cluster  # only with the switch on

    try:
        return cluster(how).deliver(moved, save_path)
    except (ConfigError, PluginError) as exc:
        print(
            f"[profwin] rank {rank}: {DELIVER_ENV}={how}: rollout traces not delivered to the driver's node ({exc}); "
            f"they stay in {save_path} on this node",
            file=sys.stderr,
            flush=True,
        )
        return moved


def _names(directory: str) -> list[str]:
    try:
        return [name for name in os.listdir(directory) if name.endswith(_TRACE_SUFFIXES)]
    except OSError:
        return []


def _finish_trims(trace_dir: str) -> None:
    key = os.path.abspath(trace_dir)
    pending = _TRIMS.get(key)
    if pending is None:
        return
    keep, seen = pending
    for name in sorted(set(_names(key)) - seen):
        path = Path(key, name)
        partial = path.with_name(f".profwin-trim-{name}")
        try:
            trim(path, keep, partial)
        except TraceError as exc:
            warn(f"{path}: left as the engine wrote it, not cut to steps {keep}: {exc}", WindowWarning)
            continue
        os.replace(partial, path)
    _TRIMS[key] = (keep, set(_names(key)))
