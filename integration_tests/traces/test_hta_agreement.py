"""profwin's device times agree with Holistic Trace Analysis (traceinsight 0.6.1 and 0.5.0) within 1 %.

The trace is SYNTHETIC on the device side: this machine has no GPU, so a REAL CPU trace written
by profwin.Session (torch driver, a tiny model) gets CUDA-like device lanes added by
``device_lanes.add_device_lanes`` (kernels on two streams, an overlapping NCCL all-reduce, a
memcpy, launch calls linked by correlation ids). HTA runs in its own cached environment
(build_hta_env.sh) on the same file. HTA leaves out the last step, so profwin is asked for the
window of all steps but the last. HTA keeps whole microseconds, hence the tolerance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from profwin_traces import summarize

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from device_lanes import add_device_lanes  # noqa: E402

pytestmark = [pytest.mark.torch, pytest.mark.slow]

_RECORD = """
import sys, torch, profwin
spec = profwin.ProfileSpec(window=profwin.Window(1, 6), output_dir=sys.argv[1])
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64))
with torch.inference_mode(), profwin.Session(spec) as session:
    for _ in range(7):
        for _ in range(4):
            model(torch.randn(8, 64))
        session.step()
"""


@pytest.fixture(scope="module")
def device_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    cpu = tmp_path_factory.mktemp("cpu")
    subprocess.run(
        [sys.executable, "-c", _RECORD, str(cpu)], check=True, timeout=300, env={**os.environ, "KINETO_LOG_LEVEL": "6"}
    )
    (recorded,) = cpu.iterdir()
    folder = tmp_path_factory.mktemp("device")
    counts = add_device_lanes(recorded, folder / "rank0.pt.trace.json.gz")
    assert counts["kernels"] > 50
    return folder / "rank0.pt.trace.json.gz"


def test_device_time_agrees_with_hta(hta_python: Path, device_trace: Path) -> None:
    proc = subprocess.run(
        [str(hta_python), str(HERE / "hta_numbers.py"), str(device_trace.parent)], capture_output=True, text=True, check=True
    )
    hta: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    summary = summarize(device_trace, window="1:5")  # steps 1..5 recorded; HTA drops the last
    device = summary.device
    assert device is not None
    busy = hta["kernel_time_us"] - hta["idle_us"]
    pairs = {
        "span (HTA kernel_time)": (device.span_us, hta["kernel_time_us"]),
        "idle": (device.idle_us, hta["idle_us"]),
        "busy": (device.busy_us, busy),
        "compute": (device.by_kind_us["compute"], hta["by_kind"]["computation"]),
        "communication": (device.by_kind_us["communication"], hta["by_kind"]["communication"]),
        "memory": (device.by_kind_us["memory"], hta["by_kind"]["memory"]),
        "launch delay mean": (device.launch_delay_mean_us, hta["launch_delay_mean_us"]),
        "launch delay max": (device.launch_delay_max_us, hta["launch_delay_max_us"]),
    }
    print(json.dumps({"hta": hta["hta"], "pairs": pairs, "launches": (device.launches, hta["launches"])}))
    for name, (ours, theirs) in pairs.items():
        assert ours == pytest.approx(theirs, rel=0.01), f"{name}: profwin {ours} vs HTA {theirs}"
    assert device.launches == hta["launches"]
    assert hta["compute_us"] == pytest.approx(device.by_kind_us["compute"], rel=0.01)
    # Per step, the window's steps add up to the whole (no work lost between steps).
    steps = [s.device for s in summary.steps if s.in_window]
    assert all(s is not None for s in steps)
    assert sum(s.work for s in steps if s) == device.work
    assert sum(s.by_kind_us["compute"] for s in steps if s) == pytest.approx(device.by_kind_us["compute"])
