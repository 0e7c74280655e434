from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def snapshot_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test signs with its own key, never the user's real one."""
    key = tmp_path / "keys" / "snapshot.key"
    monkeypatch.setenv("PROFWIN_SNAPSHOT_KEY_FILE", str(key))
    return key


_PEAK = "print(next(line for line in open('/proc/self/status') if line.startswith('VmHWM:')).split()[1])"


@pytest.fixture
def in_child() -> Callable[..., tuple[list[str], int]]:
    """``in_child(code, *args)``: run ``code`` in a fresh interpreter; the lines it printed and
    its peak RSS in KiB (``VmHWM``: ``ru_maxrss`` of a child keeps its parent's across exec)."""

    def run(code: str, *args: str) -> tuple[list[str], int]:
        done = subprocess.run(
            [sys.executable, "-c", f"{code}\n{_PEAK}", *args], capture_output=True, text=True, check=True, timeout=300
        )
        *lines, peak = done.stdout.splitlines()
        return lines, int(peak)

    return run
