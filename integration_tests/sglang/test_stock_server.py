"""A stock SGLang 0.5.23 server (no profwin server plugin, admin API key required).

Without the plugin there is no exact way to start later than the next batch: ``0:N`` uses SGLang's
immediate mode (exact in 0.5.23), later starts record ``0:end`` and trim. The absolute-counter
problem itself is shown here too: verl's mapping (``start_step = start``) on a warm server.
"""

from __future__ import annotations

import urllib.request
import warnings
from pathlib import Path

import pytest

from profwin import ProfileSpec, Window
from profwin_sglang import SessionError, session, step_names
from profwin_sglang.http import call

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

TOKENS = 12


def _spec(tmp_path: Path, window: str) -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), output_dir=tmp_path, activities=("cpu",))


def _kinds(names: list[str]) -> list[str]:
    return [name.split()[0].removeprefix("step[").rstrip("]") for name in names]


def _profile(server, spec: ProfileSpec):  # type: ignore[no-untyped-def]
    def run():  # type: ignore[no-untyped-def]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with session(server.url, spec, api_key=server.api_key) as s:
                server.generate(TOKENS)
        return s, [str(w.message) for w in caught]

    return server.retry_on_kineto_crash(run)


def test_fresh_server_window_0_5_immediate(stock_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s, caught = _profile(stock_server, _spec(tmp_path, "0:5"))
    assert s.results[0].details["mode"] == "immediate"
    assert not s.results[0].details["plugin"]
    (artifact,) = s.artifacts
    assert _kinds(step_names(artifact.path)) == ["EXTEND"] + ["DECODE"] * 4
    assert artifact.steps == Window(0, 5)
    assert not [w for w in caught if "profwin" in w], caught


def test_window_3_8_is_trimmed(stock_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s, caught = _profile(stock_server, _spec(tmp_path, "3:8"))
    assert s.results[0].details["mode"] == "trim"
    assert any("recorded as steps 0:8" in w for w in caught), caught
    (artifact,) = s.artifacts
    assert _kinds(step_names(artifact.path)) == ["DECODE"] * 5
    assert artifact.steps == Window(3, 8)


def test_window_past_the_last_batch_trimmed(stock_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s, _caught = _profile(stock_server, _spec(tmp_path, "10:13"))
    (artifact,) = s.artifacts
    assert _kinds(step_names(artifact.path)) == ["DECODE"] * 2
    assert artifact.steps == Window(10, 12)


def test_relative_start_requires_the_plugin(stock_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _spec(tmp_path, "3:8").replace(options={"sglang": {"start": "relative"}})
    with pytest.raises(SessionError, match="server plugin"):
        session(stock_server.url, spec, api_key=stock_server.api_key).start()


def test_admin_api_key(stock_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SessionError, match="API key"):
        session(stock_server.url, _spec(tmp_path, "0:2")).start()  # no key


def test_absolute_start_step_on_a_warm_server(stock_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The problem profwin solves: verl sends start_step=3, num_steps=5 for window 3:8. On a
    server that has run, SGLang clamps 3 to "the next batch", so the trace starts with the
    prefill (step 0) instead of the 4th batch."""
    for _ in range(2):
        stock_server.generate(6)
    body = {"output_dir": str(tmp_path), "start_step": 3, "num_steps": 5, "activities": ["CPU"],
            "with_stack": False, "record_shapes": False, "profile_prefix": "verl", "profile_id": "absolute"}  # fmt: skip

    def run() -> None:
        call(stock_server.url, "/start_profile", body=body, api_key=stock_server.api_key, timeout=30)
        stock_server.generate(TOKENS)

    stock_server.retry_on_kineto_crash(run)
    (trace,) = tmp_path.glob("verl-absolute-TP-0.trace.json.gz")
    assert _kinds(step_names(trace)) == ["EXTEND"] + ["DECODE"] * 4  # steps 0:5, not 3:8
    assert urllib.request.urlopen(stock_server.url + "/model_info", timeout=30).status == 200
