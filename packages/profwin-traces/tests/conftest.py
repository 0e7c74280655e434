"""Shared helpers for profwin-traces tests."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture
def install_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """``install_backend(name, source)``: a distribution ``name`` 0.1 whose ``profwin.backends``
    entry point ``name`` is ``PLUGIN`` in the module ``{name}_plugin`` (``source``), installed the
    way pip would leave it (a dist-info folder beside the module on sys.path), without touching
    core. Discovery forgets it again afterwards."""
    from profwin.discovery import step_markers

    modules: list[str] = []

    def install(name: str, source: str) -> None:
        site = tmp_path / "site"
        dist = site / f"{name}-0.1.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(f"[profwin.backends]\n{name} = {name}_plugin:PLUGIN\n")
        (site / f"{name}_plugin.py").write_text(source)
        modules.append(f"{name}_plugin")
        monkeypatch.syspath_prepend(str(site))
        monkeypatch.setattr("profwin.discovery._loaded", {})
        step_markers.cache_clear()

    yield install
    monkeypatch.undo()
    for module in modules:
        sys.modules.pop(module, None)
    step_markers.cache_clear()
