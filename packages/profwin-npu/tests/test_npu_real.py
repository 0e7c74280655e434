"""The npu driver on a real Ascend NPU (marker ``npu``): skipped wherever torch_npu cannot run.

Recipe (docs/backends/npu.md): on an Ascend machine with CANN loaded
(``source /usr/local/Ascend/ascend-toolkit/set_env.sh``) and torch + the matching torch_npu
installed, from the checkout: ``PROFWIN_NPU_MACHINE=1 pytest -m npu packages/profwin-npu``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, Session, Window
from profwin_npu import NpuProfiler, analyse


def _npu_unavailable() -> str:
    try:
        import torch
        import torch_npu
    except (ImportError, RuntimeError, OSError) as exc:
        return f"torch_npu does not import here ({type(exc).__name__}: {exc})"
    if not torch_npu.npu.is_available():
        return "torch_npu imports but reports no NPU"
    del torch
    return ""


_WHY = _npu_unavailable()
pytestmark = [pytest.mark.npu, pytest.mark.skipif(bool(_WHY), reason=_WHY or "an NPU is available")]


def decode(session: Session, steps: int) -> None:
    """A few real NPU ops per step, standing in for one decode step."""
    import torch

    x = torch.randn(256, 256, device="npu")
    with session:
        for _ in range(steps):
            x = torch.nn.functional.normalize(x @ x.T, dim=-1)
            session.step()
    torch.npu.synchronize()


def step_markers(folder: Path) -> list[int]:
    """ProfilerStep numbers in the parsed trace_view.json."""
    trace: Any = json.loads((folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    names = {e.get("name", "") for e in events if isinstance(e, dict)}
    return sorted(int(n.split("#")[1]) for n in names if n.startswith("ProfilerStep#") and n.split("#")[1].isdigit())


def test_window_is_recorded_and_parsed(tmp_path: Path) -> None:
    spec = ProfileSpec(window=Window(3, 6), output_dir=tmp_path, options={"npu": {"level": "level1", "analysis": True}})
    session = Session(spec, profiler=NpuProfiler())
    decode(session, 10)
    (art,) = session.artifacts
    assert art.steps == Window(3, 6)
    assert art.path.name.endswith("_ascend_pt")
    assert art.bytes > 0
    assert step_markers(art.path) == [3, 4, 5]
    assert (art.path / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv").is_file()


def test_raw_folder_parsed_offline(tmp_path: Path) -> None:
    session = Session(ProfileSpec(window=Window(2, 4), output_dir=tmp_path), profiler=NpuProfiler())
    decode(session, 6)
    (art,) = session.artifacts
    assert not (art.path / "ASCEND_PROFILER_OUTPUT").exists()  # analysis is off by default
    if shutil.which("msprof") is None:
        pytest.skip("CANN's msprof is not on PATH: offline parsing cannot run")
    assert analyse(art.path) == [art.path]
    assert step_markers(art.path) == [2, 3]


def test_loop_ending_inside_the_window(tmp_path: Path) -> None:
    spec = ProfileSpec(window=Window(2, 50), output_dir=tmp_path, options={"npu": {"analysis": True}})
    session = Session(spec, profiler=NpuProfiler())
    with pytest.warns(UserWarning, match="inside window 2:50"):
        decode(session, 5)
    (art,) = session.artifacts
    assert art.steps == Window(2, 5)
    # Step 5's marker was opened at the last boundary, while recording: in the trace, empty.
    assert step_markers(art.path) == [2, 3, 4, 5]
