"""verl 0.9.1's rollout profiling functions and profwin_verl's on the same verl objects (side_by_side.py):
every key, path, exported variable, warning, selected replica and relocated file equal, except the
window fields, which profwin takes from the engine's plan (docs/integrations/verl.md, "Differences"):
``profile_token_start/end`` are response tokens, encoded for the engine plugin where it is
installed, and recorded as steps with a warning that says so where it is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..sglang.conftest import package_site
from .conftest import run_json

pytestmark = pytest.mark.verl

VLLM_WINDOW_KEYS = ("delay_iterations", "max_iterations")
SGLANG_WINDOW_KEYS = ("start_step", "num_steps")
TOKEN_BASE = 2**41  # profwin.runtime.tokens.TOKEN_BASE: a token window's start as the engine plugins read it
STEPS_FALLBACK = "the trace is in steps: window "


@pytest.fixture(scope="module", params=["plugin", "no_plugin"])
def grid(
    request: pytest.FixtureRequest,
    verl_python: Path,
    sglang_python: Path,
    profwin_sites: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Any:
    """The whole grid, run in a verl environment with SGLang 0.5.23 installed beside verl (as where
    verl launches SGLang) and with (or without) profwin-sglang's server plugin registered."""
    cwd = tmp_path_factory.mktemp(f"cwd-{request.param}")
    engine_site = package_site(sglang_python, tmp_path_factory.mktemp(f"engine-{request.param}") / "site")
    return request.param, run_json(verl_python, profwin_sites[request.param], "side_by_side.py", cwd=cwd, extra=(engine_site,))


def without(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in keys}


def test_grid_covers_the_cases(grid: Any) -> None:
    _, document = grid
    assert document["verl"] == "0.9.1"
    cases = document["builders"]
    assert {c["tool"] for c in cases} == {"torch", "npu"}
    assert {tuple(c["window"]) for c in cases} >= {(None, None), (0, None), (None, 8), (3, None), (3, 11)}
    assert {c["all_ranks"] for c in cases} == {False, True}
    assert any(c["save_path"].startswith("/") for c in cases)
    assert any(not c["save_path"].startswith("/") for c in cases)


def test_vllm_arguments_equal_but_the_window(grid: Any) -> None:
    _, document = grid
    for case in document["builders"]:
        for call in ("vllm", "vllm_no_env"):
            verl, ours = case["verl"][call], case["profwin"][call]
            assert ours["env"] == verl["env"], case
            ours_own = [w for w in ours["warnings"] if w.startswith("profwin.verl:")]
            assert [w for w in ours["warnings"] if w not in ours_own] == verl["warnings"], case
            windowed = case["window"] != [None, None]
            # vLLM is not installed beside verl here: a token window is recorded as steps, and says so.
            assert len(ours_own) == int(windowed), case
            assert all(STEPS_FALLBACK in w and "because vLLM is not installed" in w for w in ours_own), ours_own
            assert list(ours["result"]) == list(verl["result"]) == ["profiler_config"]
            verl_config, our_config = verl["result"]["profiler_config"], ours["result"]["profiler_config"]
            assert list(our_config) == list(verl_config), case  # same keys, same order
            assert without(our_config, VLLM_WINDOW_KEYS) == without(verl_config, VLLM_WINDOW_KEYS), case
            start, end = case["window"]
            first = start or 0
            # verl sends delay=start: vLLM then records steps start-1..end-2. profwin: start..end-1.
            assert (verl_config["delay_iterations"], verl_config["max_iterations"]) == (first, 0 if end is None else end - first)
            if start is None and end is None:  # no window: verl's own values
                assert our_config == verl_config, case
                continue
            assert (our_config["delay_iterations"], our_config["max_iterations"]) == (
                first + 1,
                0 if end is None else end - first,
            )


def test_sglang_arguments_equal_but_the_window(grid: Any) -> None:
    mode, document = grid
    for case in document["builders"]:
        verl, ours = case["verl"]["sglang"], case["profwin"]["sglang"]
        ours_own = [w for w in ours["warnings"] if w.startswith("profwin.verl:")]
        assert [w for w in ours["warnings"] if w not in ours_own] == verl["warnings"], case
        assert ours["env"] == verl["env"]
        assert list(ours["result"]) == list(verl["result"])
        assert without(ours["result"], SGLANG_WINDOW_KEYS) == without(verl["result"], SGLANG_WINDOW_KEYS), case
        start, end = case["window"]
        first = start or 0
        length = None if end is None else end - first
        assert (verl["result"]["start_step"], verl["result"]["num_steps"]) == (start, length)  # absolute: wrong on a warm server
        ours_window = (ours["result"]["start_step"], ours["result"]["num_steps"])
        windowed = case["window"] != [None, None]
        if not windowed:
            assert ours_own == [], case
            assert ours_window == (None, None), case
        elif mode == "plugin":
            assert ours_own == [], case
            assert ours_window == (TOKEN_BASE + first, length)  # the token window, for the server plugin
        else:
            # The fallback says why; nothing else warns. Steps from the session start: immediate,
            # or 0:end recorded and cut to the window at relocation.
            (warning,) = ours_own
            assert STEPS_FALLBACK in warning, warning
            assert "entry point is not installed" in warning, warning
            assert ("not active on this SGLang" in warning) == (first > 0), warning
            assert ours_window == ((None, length) if first == 0 else (None, end)), case


def test_directories_ranks_and_replicas_equal(grid: Any) -> None:
    _, document = grid
    for case in document["builders"]:
        for key in ("trace_dir", "global_ranks", "replicas"):
            assert case["profwin"][key] == case["verl"][key], (key, case)


def test_guards_local_ranks_and_relocation_equal(grid: Any) -> None:
    _, document = grid
    for case in document["guards"]:
        assert case["profwin"] == case["verl"] == [{}, {}]
    for case in document["local_rank"]:
        assert case["profwin"] == case["verl"], case
    for case in document["relocation"]:
        assert case["profwin"] == case["verl"], case
    assert any(case["verl"]["returned"] for case in document["relocation"])
