"""benchmarks/fidelity_bench.py runs end to end (``--smoke``); its numbers are printed, never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the fidelity benchmark needs torch (scripts/bootstrap.sh installs a CPU build)")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "fidelity_bench.py"


@pytest.mark.torch
@pytest.mark.slow
def test_fidelity_bench_smoke_prints_every_variant() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--smoke"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = [line.split()[:2] for line in done.stdout.splitlines() if line.startswith(("torch ", "memory "))]
    assert [" ".join(r) for r in rows] == [
        "torch unprofiled",
        "torch native",
        "torch profwin",
        "memory unprofiled",
        "memory profwin",
    ]
