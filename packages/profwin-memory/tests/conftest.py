from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def snapshot_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test signs with its own key, never the user's real one."""
    key = tmp_path / "keys" / "snapshot.key"
    monkeypatch.setenv("PROFWIN_SNAPSHOT_KEY_FILE", str(key))
    return key
