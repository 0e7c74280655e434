"""benchmarks/parts/sglang_fidelity.py (the SGLang part of fidelity_bench.py) runs on a real SGLang server.

The smoke run of the child: one fresh CPU server with profwin-sglang's server plugin and the
benchmark's batch timer, profwin's relative window, and the numbers the benchmark reads are
there — one ``step[DECODE]`` span per recorded batch, and a wall time for every batch of the
profiled request and of the unprofiled reference. No timing is judged.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

BENCH = ROOT / "benchmarks" / "parts" / "sglang_fidelity.py"


def test_sglang_fidelity_child_reports_the_window(sglang_python: Path, tiny_model: Path) -> None:
    start, end, tokens = 2, 4, 6
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in sorted((ROOT / "packages").glob("*/src")))}
    proc = subprocess.run(
        [str(sglang_python), str(BENCH), "relative", str(tiny_model), str(start), str(end), str(tokens)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    lines = [x for x in proc.stdout.splitlines() if x.startswith("SGLANG-FIDELITY ")]
    assert len(lines) == 1, proc.stdout[-3000:]
    result = json.loads(lines[0].removeprefix("SGLANG-FIDELITY "))
    # exactly the window's batches, each a DECODE of the one request
    assert [s["name"].split()[0] for s in result["steps"]] == ["step[DECODE"] * (end - start)
    assert all(s["ms"] > 0 for s in result["steps"])
    # one batch per token, profiled or not: the prefill, then one DECODE each
    expected = ["EXTEND"] + ["DECODE"] * (tokens - 1)
    assert result["modes"] == expected
    assert result["reference_modes"] == expected
    for walls in (result["batches"], result["reference"]):
        assert len(walls["run_batch"]) == len(walls["forward"]) == tokens
        assert all(r >= f > 0 for r, f in zip(walls["run_batch"], walls["forward"], strict=True))
