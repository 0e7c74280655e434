"""On a real, warm SGLang 0.5.23 server (CPU, tiny random Llama, profwin-sglang's server plugin
installed, admin API key): verl's rollout profiling flow with verl's functions and with
profwin's, from one verl config with window 3:8 (sglang_flow.py). verl's absolute ``start_step``
starts at the next batch on a server that has run; profwin records exactly batches 3..7 of the
rollout, relative to the session with the server plugin, or recorded from 0 and trimmed at
relocation without it. Steps are counted in the traces."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..sglang.conftest import ADMIN_KEY
from .conftest import HERE, verl_env

pytestmark = [pytest.mark.verl, pytest.mark.sglang, pytest.mark.slow]

START, END = 3, 8


def kinds(names: list[str]) -> list[str]:
    return [name.split()[0].removeprefix("step[").rstrip("]") for name in names]


def flow(verl_python: Path, site: Path, url: str, save_path: Path) -> Any:
    proc = subprocess.run(
        [str(verl_python), str(HERE / "sglang_flow.py"), url, ADMIN_KEY, str(save_path), str(START), str(END)],
        env=verl_env(site), capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("site", ["plugin", "no_plugin"])
def test_verl_window_on_a_warm_sglang_server(
    site: str, verl_python: Path, sglang_python: Path, plugin_server: Any, profwin_sites: dict[str, Path], tmp_path: Path
) -> None:
    report = flow(verl_python, profwin_sites[site], plugin_server.url, tmp_path)
    print(json.dumps({side: {"args": report[side]["args"], "traces": report[side]["traces"]} for side in ("verl", "profwin")}))
    assert report["plugin_installed"] is (site == "plugin")
    (verl_trace,) = report["verl"]["traces"].values()
    (profwin_trace,) = report["profwin"]["traces"].values()
    # verl: start_step=3 on a server past batch 3 means "now": the rollout's prefill and 4 decodes.
    assert kinds(verl_trace) == ["EXTEND"] + ["DECODE"] * 4
    # profwin: batches 3..7 of the rollout, all decodes of the one request.
    assert kinds(profwin_trace) == ["DECODE"] * (END - START)
    if site == "plugin":
        assert report["profwin"]["args"]["start_step"] == 2**40 + START
    else:
        assert (report["profwin"]["args"]["start_step"], report["profwin"]["args"]["num_steps"]) == (None, END)
