"""How to look at a trace: the line every command that writes or names one ends with."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["PERFETTO_UI", "how_to_view"]

PERFETTO_UI = "https://ui.perfetto.dev"


def how_to_view(paths: Sequence[str | Path]) -> str:
    """``view: open FILE in https://ui.perfetto.dev (Open trace file) or chrome://tracing (Load)``;
    both read ``.json`` and ``.json.gz`` as written, so no step is needed before."""
    names = list(dict.fromkeys(str(p) for p in paths))
    if not names:
        return ""
    what = names[0] if len(names) == 1 else f"any of these {len(names)} files"
    return f"view: open {what} in {PERFETTO_UI} (Open trace file) or in Chrome at chrome://tracing (Load)"
