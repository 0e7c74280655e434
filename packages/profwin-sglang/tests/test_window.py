"""How windows become start_step/num_steps: every mode, and the rules that hold for any window."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profwin import ConfigError, Window
from profwin_sglang import RELATIVE_BASE, features, plan_window
from profwin_sglang.server_plugin import decode_relative

CURRENT = features("0.5.23")
OLD = features("0.5.10")


def windows() -> st.SearchStrategy[Window]:
    return st.builds(
        lambda start, length: Window(start, None if length is None else start + length),
        st.integers(0, 10_000),
        st.none() | st.integers(1, 10_000),
    )


@given(windows())
def test_with_the_server_plugin_the_window_is_relative(window: Window) -> None:
    plan = plan_window(window, features=CURRENT, plugin=True)
    assert plan.mode == "relative"
    assert plan.num_steps == window.length
    assert plan.recorded == window
    assert plan.start_step is not None
    # What the server plugin does with it at forward_ct F: the first recorded batch is F+1+start.
    for forward_ct in (0, 7, 123_456):
        assert decode_relative(plan.start_step, forward_ct) == forward_ct + 1 + window.start


@given(windows())
def test_without_the_plugin_later_starts_are_trimmed(window: Window) -> None:
    plan = plan_window(window, features=CURRENT, plugin=False)
    if window.start == 0:
        assert (plan.mode, plan.start_step, plan.num_steps) == ("immediate", None, window.length)
        assert not plan.warning
    else:
        assert plan.mode == "trim"
        assert plan.start_step is None
        assert plan.recorded == Window(0, window.end)
        assert plan.num_steps == window.end
        assert "cut out" in plan.warning
        assert str(window) in plan.warning


def test_old_versions_ask_one_more_batch_in_immediate_mode() -> None:
    # Before SGLang PR #30215 immediate mode recorded num_steps - 1 batches.
    plan = plan_window(Window(0, 5), features=OLD, plugin=False)
    assert (plan.mode, plan.num_steps, plan.window) == ("trim", 6, Window(0, 5))
    assert "PR #30215" in plan.warning


def test_start_option() -> None:
    assert plan_window(Window(3, 8), features=CURRENT, plugin=True, start="trim").mode == "trim"
    with pytest.raises(ConfigError, match="server plugin"):
        plan_window(Window(3, 8), features=CURRENT, plugin=False, start="relative")
    with pytest.raises(ConfigError, match=r"options\.sglang\.start"):
        plan_window(Window(3, 8), features=CURRENT, plugin=True, start="absolute")


def test_by_stage() -> None:
    plan = plan_window(Window(0, 5), features=CURRENT, plugin=True, by_stage=True)
    assert (plan.mode, plan.start_step, plan.num_steps) == ("by_stage", None, 5)
    for bad in (Window(2, 5), Window(0, None)):
        with pytest.raises(ConfigError, match=r"':N'"):
            plan_window(bad, features=CURRENT, plugin=True, by_stage=True)


@pytest.mark.parametrize("value", [None, 0, 5, RELATIVE_BASE - 1, 2 * RELATIVE_BASE, 1 << 62, "5"])
def test_absolute_start_steps_pass_the_server_plugin_untouched(value: object) -> None:
    assert decode_relative(value, 99) == value
