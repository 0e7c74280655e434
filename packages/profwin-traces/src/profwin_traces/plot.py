"""Plots (matplotlib, the ``plot`` extra): per-step time, a steps × ranks heat map, diff bars.

Every figure has a title that fits (long paths are cut to their file name and wrapped), a
legend or colour bar, and is written at :data:`DPI` dots per inch.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profwin.plugin import PluginError, checked
from profwin.plugin.files import atomic_path

# A plot of one kind imports neither of the other kinds' modules. The hints are dotted for the
# argument check; mypy reads ``profwin_traces.summarize`` and ``.diff`` as the package's functions
# of those names (its lazy exports), hence the ignores.
if TYPE_CHECKING:
    import profwin_traces.diff
    import profwin_traces.ranks
    import profwin_traces.summarize

__all__ = ["DPI", "plot_diff", "plot_ranks", "plot_steps"]

DPI = 150


def _pyplot() -> Any:
    try:
        import matplotlib  # type: ignore[import-not-found]

        matplotlib.use("Agg")  # files only; never needs a display
        import matplotlib.pyplot as plt  # type: ignore[import-not-found]
    except ImportError:
        raise PluginError(
            "plotting needs matplotlib, which is not importable; install it with: pip install 'profwin-traces[plot]'"
        ) from None
    return plt


def _save(fig: Any, ax: Any, title: str, png_path: str | Path) -> Path:
    ax.set_title("\n".join(textwrap.wrap(title, 70)), fontsize=10)
    fig.tight_layout()
    path = Path(png_path)
    with atomic_path(path, suffix=path.suffix) as tmp:  # complete or not at all, never through a link
        fig.savefig(tmp, dpi=DPI, format=path.suffix.lstrip(".").lower() or None)
    return path


@checked
def plot_steps(summary: profwin_traces.summarize.Summary, png_path: str | Path) -> Path:  # type: ignore[name-defined]
    """Each step's wall time (ms) against its number, the window's steps highlighted; for a
    trace with device lanes, a second panel below: each window step's device busy and idle time."""
    plt = _pyplot()
    from matplotlib.patches import Patch  # type: ignore[import-not-found]

    numbers = [s.number for s in summary.steps]
    ms = [s.dur_us / 1000 for s in summary.steps]
    colors = ["tab:orange" if s.in_window else "tab:gray" for s in summary.steps]
    device = [s for s in summary.steps if s.device is not None]
    width = max(7.0, min(len(numbers) / 10, 20.0))
    if device:
        fig, (ax, dev) = plt.subplots(2, 1, figsize=(width, 7.0), sharex=True, height_ratios=(3, 2))
        _device_bars(dev, [s.number for s in device], [s.device for s in device], "step")
    else:
        fig, ax = plt.subplots(figsize=(width, 4.0))
    try:
        ax.bar(numbers, ms, width=0.8 if len(numbers) <= 200 else 1.0, color=colors)
        ax.axhline(summary.step_us["median"] / 1000, color="tab:blue", linestyle="--", linewidth=1)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel(f"step ({summary.producer} markers)")
        ax.set_ylabel("wall time (ms)")
        handles = [
            Patch(color="tab:orange", label=f"steps {summary.selected}"),
            plt.Line2D([], [], color="tab:blue", linestyle="--", label=f"median {summary.step_us['median'] / 1000:.3f} ms"),
        ]
        if any(not s.in_window for s in summary.steps):
            handles.insert(1, Patch(color="tab:gray", label="outside the window"))
        ax.legend(handles=handles, loc="best", fontsize=8)
        scope = "all steps" if summary.window is None else f"window {summary.window}"
        return _save(fig, ax, f"{Path(summary.trace.path).name}: step wall time, {scope}", png_path)
    finally:
        plt.close(fig)


def _device_bars(ax: Any, positions: list[Any], stats: list[Any], label: str, *, horizontal: bool = False) -> None:
    """Stacked bars of device busy (union of kernels and copies) and idle time, in ms."""
    busy = [d.busy_us / 1000 for d in stats]
    idle = [d.idle_us / 1000 for d in stats]
    if horizontal:
        ax.barh(positions, busy, color="tab:green", label="device busy")
        ax.barh(positions, idle, left=busy, color="tab:red", alpha=0.6, label="device idle (within its first-to-last work)")
        ax.set_xlabel("device time in the window (ms)")
        ax.set_ylabel(label)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2, fontsize=8, frameon=False)
        return
    else:
        ax.bar(positions, busy, color="tab:green", label="device busy")
        ax.bar(positions, idle, bottom=busy, color="tab:red", alpha=0.6, label="device idle (within its first-to-last work)")
        ax.set_ylabel("device time (ms)")
        ax.set_xlabel(label)
    ax.legend(loc="best", fontsize=8)


@checked
def plot_ranks(ranks: profwin_traces.ranks.Ranks, png_path: str | Path) -> Path:
    """A steps × ranks heat map of step wall time (ms), the slowest rank of each step marked; for
    traces with device lanes, a second panel: each rank's device busy and idle time over the window."""
    plt = _pyplot()
    steps = [sp.step for sp in ranks.spread]
    rank_ids = [r.rank for r in ranks.ranks]
    col = {n: i for i, n in enumerate(steps)}
    row = {r: i for i, r in enumerate(rank_ids)}
    grid = [[float("nan")] * len(steps) for _ in rank_ids]
    for r in ranks.rows:
        grid[row[r.rank]][col[r.step]] = r.dur_us / 1000
    size = (max(7.0, min(len(steps) / 8, 20.0)), max(3.0, min(1.0 + 0.4 * len(rank_ids), 12.0)))
    device = [(s.trace.rank if s.trace.rank is not None else i, s.device) for i, s in enumerate(ranks.summaries) if s.device]
    if device:
        fig, (ax, dev) = plt.subplots(2, 1, figsize=(size[0], size[1] * 2 + 1.0))
        _device_bars(dev, [str(rank) for rank, _ in device], [d for _, d in device], "rank", horizontal=True)
        dev.set_title("device time per rank over the window", fontsize=9)
    else:
        fig, ax = plt.subplots(figsize=size)
    try:
        image = ax.imshow(grid, aspect="auto", cmap="viridis", interpolation="nearest")
        fig.colorbar(image, ax=ax, label="step wall time (ms)")
        ax.scatter([col[sp.step] for sp in ranks.spread], [row[sp.slowest_rank] for sp in ranks.spread],
                   marker="x", color="red", s=12, label="slowest rank of the step")  # fmt: skip
        ax.set_yticks(range(len(rank_ids)), [str(r) for r in rank_ids])
        stride = max(1, len(steps) // 20)
        ax.set_xticks(range(0, len(steps), stride), [str(n) for n in steps[::stride]])
        ax.set_xlabel(f"step ({ranks.producer} markers)")
        ax.set_ylabel("rank")
        # Below the axes: over the map it would hide cells.
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8, frameon=False)
        scope = "all steps" if ranks.window is None else f"window {ranks.window}"
        return _save(fig, ax, f"step wall time on {len(rank_ids)} ranks, {scope}", png_path)
    finally:
        plt.close(fig)


@checked
def plot_diff(d: profwin_traces.diff.Diff, png_path: str | Path, *, top: int = 15) -> Path:  # type: ignore[name-defined]
    """Horizontal bars of self time per step on each side, for the operators that changed most."""
    plt = _pyplot()
    ops = list(d.ops[:top])[::-1]
    labels = [textwrap.shorten(o.name, 60, placeholder="…") + (" [k]" if o.kernel else "") for o in ops]
    fig, ax = plt.subplots(figsize=(10.0, max(3.0, 0.35 * len(ops) + 1.5)))
    try:
        y = range(len(ops))
        ax.barh([i + 0.2 for i in y], [o.a_us / 1000 for o in ops], height=0.4, color="tab:gray", label=f"A: {Path(d.a).name}")
        ax.barh([i - 0.2 for i in y], [o.b_us / 1000 for o in ops], height=0.4, color="tab:orange", label=f"B: {Path(d.b).name}")
        for i, o in zip(y, ops, strict=True):
            ax.annotate(f"{o.change_us / 1000:+.3f} ms", (max(o.a_us, o.b_us) / 1000, i), xytext=(4, -3),
                        textcoords="offset points", fontsize=7)  # fmt: skip
        ax.set_yticks(list(y), labels, fontsize=7)
        ax.margins(x=0.12)
        ax.set_xlabel("self time per step (ms)")
        ax.legend(loc="lower right", fontsize=8)
        ratio = "" if d.ratio is None else f" ({d.ratio:.3f}x)"
        title = f"mean step {d.a_mean_us / 1000:.3f} ms → {d.b_mean_us / 1000:.3f} ms{ratio}: operators that changed most"
        return _save(fig, ax, title, png_path)
    finally:
        plt.close(fig)
