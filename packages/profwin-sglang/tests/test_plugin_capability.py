"""Who decides that the relative window is used: the server that runs (it reports the plugin), or,
before launch, the SGLang installed in this process. Everything else records 0:end and trims,
with a warning that says why. (Real SGLang packages: integration_tests/sglang/test_sglang_0_5_12.py.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import profwin
from profwin import ProfileSpec, Window
from profwin_sglang import features, plan_window
from profwin_sglang.server_plugin import unavailable_here
from profwin_sglang.versions import plugin_inactive_reason


def test_an_older_server_is_told_apart_from_a_missing_install() -> None:
    old = plugin_inactive_reason("0.5.12")
    assert "SGLang 0.5.12 is older than 0.5.23" in old
    assert "sglang.srt.managers.scheduler_components" in old
    for version in ("0.5.23", "0.6.0", None, "not-a-version"):
        assert "not installed in the server's environment" in plugin_inactive_reason(version)


@pytest.mark.parametrize("window", [Window(3, 8), Window(1, None)])
def test_the_trim_warning_says_why_the_plugin_is_not_active(window: Window) -> None:
    why = plugin_inactive_reason("0.5.12")
    plan = plan_window(window, features=features("0.5.12"), plugin=False, inactive=why)
    assert plan.mode == "trim"
    assert plan.start_step is None  # never the encoded start the server would read as absolute
    assert "not active on this SGLang" in plan.warning
    assert why in plan.warning
    assert plan.recorded == Window(0, window.end)


def test_without_sglang_here_nothing_is_installed_to_hook() -> None:
    assert importlib.util.find_spec("sglang") is None  # the dev environment has no SGLang
    assert unavailable_here() == "SGLang is not installed in this environment"


def test_plan_here_never_sends_the_encoded_start_without_a_hookable_sglang(tmp_path: Path) -> None:
    backend = profwin.backend("sglang")
    spec = ProfileSpec(window=Window(3, 8), output_dir=tmp_path)
    plan = backend.plan_here(spec)  # type: ignore[attr-defined]
    assert plan.mechanism == "trim"
    assert "start_step" not in (plan.request or {})
    assert plan.details["plugin_inactive"] == "SGLang is not installed in this environment"
    assert any("SGLang is not installed in this environment" in note for note in plan.notes)
    # profwin args' plan gives the same stock request, and the plugin's as the alternative.
    asked = backend.plan(spec)
    assert asked.mechanism == "trim"
    assert asked.alternative is not None
    assert asked.alternative["request"]["start_step"] > 1 << 40


def test_plan_here_sends_no_encoding_for_a_window_from_zero(tmp_path: Path) -> None:
    plan = profwin.backend("sglang").plan_here(ProfileSpec(window=Window(0, 5), output_dir=tmp_path))  # type: ignore[attr-defined]
    assert "start_step" not in (plan.request or {})


def test_the_token_range_touches_the_relative_one() -> None:
    from profwin.plugin.engines import token_claimed
    from profwin_sglang.server_plugin import RELATIVE_BASE

    assert not token_claimed(2 * RELATIVE_BASE - 1)  # the relative range's last value
    assert token_claimed(2 * RELATIVE_BASE)  # the ranges touch, never overlap
