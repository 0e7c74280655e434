"""benchmarks/parts/sglang_fidelity.py (the SGLang part of fidelity_bench.py) runs on a real SGLang server.

The smoke run of the child: one fresh CPU server with profwin-sglang's server plugin (the
benchmark measures the plugin's exact window against the stock trim) and the benchmark's batch timer, profwin's relative window, and the numbers the benchmark reads are
there — one ``step[DECODE]`` span per recorded batch, and a wall time for every batch of the
profiled request and of the unprofiled reference. No timing is judged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..test_benchmarks import run_part
from .conftest import ROOT

pytestmark = [pytest.mark.sglang, pytest.mark.slow]


def test_sglang_fidelity_child_reports_the_window(sglang_python: Path, tiny_model: Path) -> None:
    start, end, tokens = 2, 4, 6
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in sorted((ROOT / "packages").glob("*/src")))}
    result = run_part(
        sglang_python,
        "sglang_fidelity.py",
        "relative",
        str(tiny_model),
        str(start),
        str(end),
        str(tokens),
        tag="SGLANG-FIDELITY",
        env=env,
    )
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
