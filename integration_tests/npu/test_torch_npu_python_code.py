"""profwin's npu driver against torch_npu's real Python profiler code (no NPU, no CANN).

torch_npu cannot be installed here (it breaks ``import torch`` without CANN), so
fetch_torch_npu.sh unpacks the .py files of the torch-npu wheel into profwin's cache and
torch_npu_pyonly.py runs them in a subprocess behind an inert stand-in for the C extension.
This checks what the unit tests' stand-in only models: that torch_npu's own schedule, action
controller and folder naming, driven by a real profwin.Session, record the window's steps with the
session's ProfilerStep numbers, and that the options profwin builds pass torch_npu's argument
checks without a single "reset" warning. Collection and parsing need an NPU: test_npu_real.py.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
TORCH_NPU_VERSION = os.environ.get("PROFWIN_TORCH_NPU_VERSION", "2.13.0")
# torch_npu prints these when it silently replaces an argument it did not like.
RESET = re.compile(r"reset|Invalid|set by default|will be deprecated", re.IGNORECASE)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def torch_npu_src() -> Path:
    done = subprocess.run(
        ["bash", str(HERE / "fetch_torch_npu.sh"), TORCH_NPU_VERSION], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: could not fetch torch-npu=={TORCH_NPU_VERSION} sources: {done.stderr[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def run(src: Path, tmp_path: Path, sessions: list[dict[str, Any]], configs: list[dict[str, Any]]) -> dict[str, Any]:
    scenarios, result = tmp_path / "scenarios.json", tmp_path / "result.json"
    scenarios.write_text(json.dumps({"sessions": sessions, "configs": configs}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in sorted((ROOT / "packages").glob("*/src"))))
    for var in ("PROFILER_SAMPLECONFIG", "PROFILING_MODE"):
        env.pop(var, None)
    done = subprocess.run(
        [sys.executable, str(HERE / "torch_npu_pyonly.py"), str(src), str(scenarios), str(result)],
        capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    data: dict[str, Any] = json.loads(result.read_text())
    return data


def test_window_through_real_torch_npu_control_flow(torch_npu_src: Path, tmp_path: Path) -> None:
    (clean, early, warm_up, at_zero) = run(
        torch_npu_src,
        tmp_path,
        [
            {"window": "3:6", "steps": 8, "options": {"level": "level1"}},
            {"window": "2:10", "steps": 5},
            {"window": "5:8", "steps": 4},
            {"window": "0:3", "steps": 5},
        ],
        [],
    )["sessions"]

    # Warm-up marker #2 (not recorded: torch_npu is in WARMUP), the window 3..5, and #6, opened by
    # the step() that saves (after recording stopped).
    assert clean["markers"] == [f"ProfilerStep#{k}" for k in range(2, 7)]
    (art,) = clean["artifacts"]
    assert art["steps"] == "3:6"
    assert art["kind"] == "ascend-pt"
    assert re.fullmatch(rf"profwin_rank0_w3-6_{clean['pid']}_\d{{17}}_ascend_pt", art["name"])
    assert "profiler_info.json" in art["files"]
    assert art["bytes"] > 0
    assert clean["printed"] == []  # a clean end: torch_npu had nothing to complain about
    assert clean["error"] is None

    (art,) = early["artifacts"]
    assert art["steps"] == "2:5"
    assert early["markers"] == [f"ProfilerStep#{k}" for k in range(1, 6)]
    assert any("Stop profiler while current state is RECORD" in line for line in early["printed"])

    assert warm_up["artifacts"] == []
    assert warm_up["folders_left"] == []  # torch_npu deleted the warm-up folder itself
    assert any("current state is WARMUP" in line for line in warm_up["printed"])

    assert [a["steps"] for a in at_zero["artifacts"]] == ["0:3"]
    assert any("won't be using warmup" in line for line in at_zero["printed"])


def test_a_long_window_in_parts_through_real_torch_npu_control_flow(torch_npu_src: Path, tmp_path: Path) -> None:
    """Window 2:12 in parts of 4 steps (profwin.parts): three ``*_ascend_pt`` folders, one a part,
    each holding its own steps; torch_npu restarted between two steps loses and doubles none."""
    (parted,) = run(torch_npu_src, tmp_path, [{"window": "2:12", "steps": 14, "part_steps": 4}], [])["sessions"]
    assert parted["error"] is None
    assert [a["steps"] for a in parted["artifacts"]] == ["2:6", "6:10", "10:12"]
    pid = parted["pid"]
    names = [a["name"] for a in parted["artifacts"]]
    for name, part in zip(names, ("part0001_s2-6", "part0002_s6-10", "part0003_s10-12"), strict=True):
        assert re.fullmatch(rf"profwin_rank0_w2-12_{part}_{pid}_\d{{17}}_ascend_pt", name), name
    assert names == sorted(names)
    assert all("profiler_info.json" in a["files"] for a in parted["artifacts"])
    # The markers torch_npu entered: the warm-up #1, then each part's steps followed by the marker
    # its saving step() opens after recording stopped (#6, #10, #12, in no trace, as #6 of the
    # clean window above): each step's marker is entered once while a part records.
    assert parted["markers"] == [f"ProfilerStep#{k}" for k in [1, *range(2, 7), *range(6, 11), *range(10, 13)]]


def test_every_option_combination_passes_torch_npu_checks_unchanged(torch_npu_src: Path, tmp_path: Path) -> None:
    levels = ["level_none", "level0", "level1", "level2"]
    metrics = ["PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB", "ResourceConflictRatio",
               "L2Cache", "MemoryAccess", "AiCoreNone"]  # fmt: skip
    configs: list[dict[str, Any]] = []
    for level, export, mstx in itertools.product(levels, ["text", "db", ["text", "db"]], [True, False]):
        if level == "level_none" and not mstx:
            continue  # refused by profwin (torch_npu would force it on)
        for metric in metrics if level in ("level1", "level2") else [None]:
            options: dict[str, Any] = {"level": level, "export_type": export, "mstx": mstx, "l2_cache": mstx}
            if metric:
                options["aic_metrics"] = metric
            if mstx:
                options["mstx_domain_exclude"] = ["communication"]
            configs.append(options)
    results = run(torch_npu_src, tmp_path, [], configs)["configs"]
    assert len(results) == len(configs) > 100
    for result in results:
        options = result["options"]
        assert not [line for line in result["printed"] + result["warnings"] if RESET.search(line)], options
        assert result["level"].lower() == options["level"]
        assert result["tx"] is options["mstx"]
        export = options["export_type"]
        assert result["export_type"] == sorted([export] if isinstance(export, str) else export)
        if options.get("aic_metrics") in (None, "AiCoreNone"):
            assert result["aic_metrics"] == "ACL_AICORE_NONE"
        else:
            assert result["aic_metrics"] != "ACL_AICORE_NONE"
