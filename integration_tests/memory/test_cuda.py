"""The checks of cuda_check.py under pytest: skipped without a CUDA device."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (torch.cuda.is_available() is False)"),
]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("profwin_cuda_check", Path(__file__).with_name("cuda_check.py"))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECK_NAMES = [
    "window_is_exact",
    "frees_are_recorded",
    "early_close",
    "failed_step_is_kept",
    "second_session_starts_clean",
    "history_is_off_after_close",
    "max_entries_bounds_the_history",
    "memory_viz_and_summary",
    "unselected_rank_writes_nothing",
]


@pytest.mark.parametrize("name", CHECK_NAMES)
def test_snapshot_covers_exactly_the_window(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFWIN_SNAPSHOT_KEY_FILE", str(tmp_path / "snapshot.key"))
    checks = _load().CHECKS
    assert sorted(checks) == sorted(CHECK_NAMES)
    checks[name](tmp_path / "out")
