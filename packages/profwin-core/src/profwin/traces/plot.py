"""``plot_steps``: per-step wall time as a bar chart, the window's steps highlighted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from profwin.errors import PluginError
from profwin.traces.summarize import Summary

__all__ = ["plot_steps"]


def _pyplot() -> Any:
    try:
        import matplotlib  # type: ignore[import-not-found]

        matplotlib.use("Agg")  # files only; never needs a display
        import matplotlib.pyplot as plt  # type: ignore[import-not-found]
    except ImportError:
        raise PluginError(
            "plotting steps needs matplotlib, which is not importable; install it with: pip install 'profwin-core[plot]'"
        ) from None
    return plt


def plot_steps(summary: Summary, png_path: str | Path) -> Path:
    """Draw each step's wall time (ms) against its number into ``png_path``; returns the path."""
    plt = _pyplot()
    numbers = [s.number for s in summary.steps]
    ms = [s.dur_us / 1000 for s in summary.steps]
    colors = ["tab:orange" if s.in_window else "tab:gray" for s in summary.steps]
    fig, ax = plt.subplots(figsize=(max(6.0, min(len(numbers) / 10, 20.0)), 3.5))
    try:
        ax.bar(numbers, ms, width=0.8 if len(numbers) <= 200 else 1.0, color=colors)
        ax.set_xlabel(f"step ({summary.producer} markers)")
        ax.set_ylabel("wall time (ms)")
        scope = "all steps" if summary.window is None else f"window {summary.window} (orange)"
        ax.set_title(f"{Path(summary.trace.path).name}: {scope}, median {summary.step_us['median'] / 1000:.3f} ms")
        fig.tight_layout()
        path = Path(png_path)
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return path
