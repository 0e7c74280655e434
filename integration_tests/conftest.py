"""What every engine's integration tests share: their cached environment, built on first use."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .dist_info import dist_info_site

__all__ = ["built_python", "dist_info_site", "workspace_members"]


def built_python(script: Path, *args: str, label: str, python: Path | None = None) -> Path:
    """Run a build script (a no-op when its cached environment is ready) and return that
    environment's python: ``python`` when given, else ``bin/python`` of the folder the script
    printed last. A failed build fails the tests: a cold cache must never turn into a skip."""
    started = time.monotonic()
    proc = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=1800, check=False)
    found = python or (Path(proc.stdout.strip().splitlines()[-1]) / "bin" / "python" if proc.stdout.strip() else None)
    if proc.returncode != 0 or found is None or not found.exists():
        pytest.fail(f"the {label} environment could not be built ({script.name} exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    print(f"{label} environment ready in {time.monotonic() - started:.0f} s: {found}", file=sys.stderr)
    return found


def end_process_group(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM to the process group ``proc`` leads (started with ``start_new_session=True``), then
    SIGKILL if it is still there after ``timeout`` seconds."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


def workspace_members() -> dict[str, Path]:
    """The workspace's packages, name -> folder: ``packages/*`` less the root's ``exclude`` (profwin-ray
    is a path source outside the workspace, so uv keeps ray out of the dev environment; it is tested
    in the cached Ray environment, integration_tests/ray/)."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    outside = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["uv"]["workspace"].get("exclude", []))
    return {
        p.parent.name: p.parent
        for p in sorted(root.glob("packages/*/pyproject.toml"))
        if f"packages/{p.parent.name}" not in outside
    }
