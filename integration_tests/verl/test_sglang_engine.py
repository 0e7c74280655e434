"""On real, warm SGLang servers (CPU, tiny random Llama, profwin-sglang installed in the server's
environment, admin API key; verl launches SGLang in its own environment, so a verl user who
installs profwin's verl and SGLang pieces there has the server plugin, and the key is verl's own
admin key): verl's rollout profiling flow with verl's functions and with
profwin's, from one verl config with ``profile_token_start/end`` 3:8 (sglang_flow.py). verl's
absolute ``start_step`` starts at the next batch on a server that has run; profwin records exactly
the batches of response tokens 3..7 of the rollout's one request (batches 3..7: its prefill gives
token 0): as a token window where the server plugin works (SGLang 0.5.23 installed where the
builder runs, as verl launches SGLang there), otherwise as steps 3:8 recorded from 0 and trimmed at
relocation, with a warning that says why (no plugin entry point; SGLang 0.5.12, verl 0.9.1's pin,
which the plugin cannot hook). Steps are counted in the traces."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..sglang.conftest import ADMIN_KEY, OLD_STUBS, package_site
from ..sglang.conftest import HERE as SGLANG_TESTS
from .conftest import HERE, REPO, verl_env

pytestmark = [pytest.mark.verl, pytest.mark.sglang, pytest.mark.slow]

START, END = 3, 8


def overlay_site(base: Path, extra: Path, folder: Path) -> Path:
    """``folder`` holding links to what ``extra``'s environment has and ``base``'s lacks (verl and
    what it imports beside an SGLang environment): after ``base``'s own packages on the path, so
    the engine keeps its own transformers and torch."""
    (base_site,) = (base.parent.parent / "lib").glob("python3.*/site-packages")
    (extra_site,) = (extra.parent.parent / "lib").glob("python3.*/site-packages")
    have = {p.name.split("-")[0].lower() for p in base_site.iterdir()}
    folder.mkdir(parents=True)
    for entry in extra_site.iterdir():
        if entry.name.split("-")[0].lower() not in have and not entry.name.endswith(".pth"):
            (folder / entry.name).symlink_to(entry)
    return folder


def kinds(names: list[str]) -> list[str]:
    return [name.split()[0].removeprefix("step[").rstrip("]") for name in names]


def flow(verl_python: Path, site: Path, url: str, save_path: Path, engine_site: Path) -> Any:
    proc = subprocess.run(
        [str(verl_python), str(HERE / "sglang_flow.py"), url, ADMIN_KEY, str(save_path), str(START), str(END)],
        env=verl_env(site, engine_site), capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize(
    ("sglang", "site", "why"),
    [
        ("0.5.23", "plugin", None),
        ("0.5.23", "no_plugin", "profwin-sglang's sglang.srt.plugins entry point is not installed"),
        ("0.5.12", "plugin", "SGLang 0.5.12 has no sglang.srt.managers.scheduler_components."),
    ],
)
def test_verl_window_on_a_warm_sglang_server(
    sglang: str, site: str, why: str | None, profwin_sites: dict[str, Path], tmp_path: Path, request: Any
) -> None:
    server = request.getfixturevalue("plugin_server" if sglang == "0.5.23" else "old_plugin_server")
    engine_python = request.getfixturevalue("sglang_python" if sglang == "0.5.23" else "old_sglang_python")
    engine_site = package_site(engine_python, tmp_path / "engine-site")
    report = flow(request.getfixturevalue("verl_python"), profwin_sites[site], server.url, tmp_path / "prof", engine_site)
    print(json.dumps({side: {"args": report[side]["args"], "traces": report[side]["traces"]} for side in ("verl", "profwin")}))
    (verl_trace,) = report["verl"]["traces"].values()
    (profwin_trace,) = report["profwin"]["traces"].values()
    # verl: start_step=3 on a server past batch 3 means "now": the rollout's prefill and 4 decodes.
    assert kinds(verl_trace) == ["EXTEND"] + ["DECODE"] * 4
    # profwin: the batches of tokens 3..7 of the rollout's one request, all decodes.
    assert kinds(profwin_trace) == ["DECODE"] * (END - START)
    args = report["profwin"]["args"]
    if why is None:
        assert (args["start_step"], args["num_steps"]) == (2**41 + START, END - START)  # the token window, encoded
        assert report["profwin_warnings"] == []
    else:
        # 0.5.12's immediate mode records one batch fewer than asked: one more is asked for.
        assert (args["start_step"], args["num_steps"]) == (None, END + (1 if sglang == "0.5.12" else 0))
        assert any("not active on this SGLang" in w and why in w for w in report["profwin_warnings"]), report
        assert any(w.startswith("profwin.verl: the trace is in steps: window 3:8 tokens") for w in report["profwin_warnings"])


def test_fully_async_rollouter_reaches_profwins_builder_on_sglang_0_5_12(
    old_sglang_python: Path, old_plugin_server: Any, verl_python: Path, profwin_sites: dict[str, Path], tmp_path: Path
) -> None:
    """verl's fully-async trainer profiles rollout through the replicas' profiler interface
    (fully_async_flow.py): with verl's autopatch, that path calls profwin's builder and relocation,
    and on SGLang 0.5.12 records batches 3..7 exactly (0:8 recorded, trimmed at relocation)."""
    (verl_site,) = (verl_python.parent.parent / "lib").glob("python3.*/site-packages")
    paths = [SGLANG_TESTS / "stubs", OLD_STUBS, *sorted((REPO / "packages").glob("*/src")), profwin_sites["plugin"]]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "SGLANG_PLUGINS")}
    env["PYTHONPATH"] = os.pathsep.join(map(str, paths))
    proc = subprocess.run(
        [str(old_sglang_python), str(HERE / "fully_async_flow.py"), old_plugin_server.url, ADMIN_KEY,
         str(tmp_path / "prof"), str(START), str(END), str(verl_site)],
        env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout)
    print(json.dumps(report))
    assert report["verl"] == "0.9.1"
    assert report["autopatch_warnings"] == []  # verl 0.9.1 is patched, not refused
    assert report["server_module_builder_is_profwin"]
    assert report["server_module_relocate_is_profwin"]
    (sent,) = report["sent"]
    assert (sent["start_step"], sent["num_steps"]) == (None, END + 1)  # never the encoding 0.5.12 cannot read
    assert any("SGLang 0.5.12 has no sglang.srt.managers.scheduler_components." in w for w in report["builder_warnings"])
    (trace,) = report["traces"].values()
    assert kinds(trace) == ["DECODE"] * (END - START)


@pytest.mark.parametrize("sglang", ["0.5.23", "0.5.12"])
def test_verls_own_sglang_path_on_a_real_tokenizer_manager(
    sglang: str, verl_python: Path, profwin_sites: dict[str, Path], tmp_path: Path, request: Any
) -> None:
    """verl's ``SGLangHttpServer.start_profile``/``stop_profile`` on an in-process Engine's real
    tokenizer manager (verl_sglang_engine.py), with verl's autopatch, on a stock engine (no
    server plugin): verl calls ``start_profile(**args)``, which SGLang 0.5.23 does not take as
    keywords (``start_profile(self, req=None)``), and 0.5.12 does. profwin's builder gives each the
    form it takes, and the trace holds the batches of tokens 3..7 (recorded from the start, trimmed
    at relocation). verl's own builder fails on 0.5.23 with the TypeError users hit; and verl's own
    stop raises when SGLang stopped by itself at the window's end (the rollout ran on), which
    profwin's patch takes as the stop it is (sglang_stop.py)."""
    old = sglang == "0.5.12"
    engine_python = request.getfixturevalue("old_sglang_python" if old else "sglang_python")
    model = request.getfixturevalue("old_tiny_model" if old else "tiny_model")
    stubs = [SGLANG_TESTS / "stubs", *([OLD_STUBS] if old else [])]
    env = verl_env(profwin_sites["no_plugin"], overlay_site(engine_python, verl_python, tmp_path / "verl-site"))
    env["PYTHONPATH"] = os.pathsep.join([*map(str, stubs), env["PYTHONPATH"]])
    env["HF_HUB_OFFLINE"] = "1"

    def run(side: str) -> Any:
        out = tmp_path / side
        proc = subprocess.run(
            [str(engine_python), str(HERE / "verl_sglang_engine.py"), str(model), str(out), side, str(START), str(END)],
            env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-4000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    ours = run("profwin")
    assert ours["sglang"] == sglang
    assert "start_error" not in ours, ours
    assert "stop_error" not in ours, ours
    print(json.dumps({"sglang": sglang, "args": ours["args"], "traces": ours["traces"]}))
    (trace,) = ours["traces"].values()
    assert kinds(trace) == ["DECODE"] * (END - START)
    if not old:
        assert ours["args"].startswith("{'req': ProfileReq(")
        theirs = run("verl")
        assert theirs["start_error"].startswith("TypeError:"), theirs
        assert "unexpected keyword argument" in theirs["start_error"]
