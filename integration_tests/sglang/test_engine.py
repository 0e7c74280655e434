"""``profwin_sglang.session`` on an in-process ``sglang.Engine`` *without* the server plugin.

This is the stock path: the session reads the Engine's server info, finds no plugin, and uses
immediate mode for ``0:5`` (exact in 0.5.23) and record-and-trim for later starts. The engine
is warmed by three requests first, so an absolute start_step would be wrong here. The last window
runs through the async context manager on the engine's event loop. A token window (``3:8 tokens``)
is recorded as its steps there, with a warning.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_stock_engine_windows(sglang_python: Path, tiny_model: Path, tmp_path: Path) -> None:
    paths = [HERE / "stubs", *(ROOT / "packages" / p / "src" for p in ("profwin-sglang", "profwin-traces", "profwin-core"))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths)), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [
            str(sglang_python),
            str(HERE / "engine_session.py"),
            str(tiny_model),
            str(tmp_path),
            "0:5",
            "3:8",
            "10:13",
            "async:2:6",
            "3:8 tokens",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("PROFWIN-REPORT ")]
    assert done.returncode == 0, done.stderr[-4000:]
    assert lines, done.stdout[-4000:]
    report = {entry["window"]: entry for entry in json.loads(lines[0].removeprefix("PROFWIN-REPORT "))}
    kinds = {
        window: [name.split()[0].removeprefix("step[").rstrip("]") for name in entry["artifacts"][0]["names"]]
        for window, entry in report.items()
    }
    assert kinds == {
        "0:5": ["EXTEND"] + ["DECODE"] * 4,
        "3:8": ["DECODE"] * 5,
        "10:13": ["DECODE"] * 2,
        "async:2:6": ["DECODE"] * 4,
        "3:8 tokens": ["DECODE"] * 5,
    }
    modes = {w: e["mode"] for w, e in report.items()}
    assert modes == {"0:5": "immediate", "3:8": "trim", "10:13": "trim", "async:2:6": "trim", "3:8 tokens": "trim"}
    steps = {w: e["artifacts"][0]["steps"] for w, e in report.items()}
    assert steps == {"0:5": "0:5", "3:8": "3:8", "10:13": "10:12", "async:2:6": "2:6", "3:8 tokens": "3:8"}
    # No plugin in this engine: a token window is its steps, and says so.
    assert any("the trace is in steps: window 3:8 tokens is recorded as steps 3:8" in w for w in report["3:8 tokens"]["warnings"])
    assert not any(e["plugin"] for e in report.values())
