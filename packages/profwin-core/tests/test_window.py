"""Window: construction, parsing, mapping forms and the half-open rule, with property tests."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profwin import ConfigError, Window
from profwin.window import check_bounds

bounds = st.one_of(st.none(), st.integers(min_value=0, max_value=10**9))


@st.composite
def windows(draw: st.DrawFn) -> Window:
    start = draw(st.integers(min_value=0, max_value=10**6))
    end = draw(st.one_of(st.none(), st.integers(min_value=start + 1, max_value=start + 10**6)))
    return Window(start, end, unit=draw(st.sampled_from(["steps", "tokens"])))


def test_defaults_and_derived_values() -> None:
    w = Window(20, 80)
    assert (w.start, w.end, w.length, w.steps_to_skip, w.steps_to_record, w.last) == (20, 80, 60, 20, 60, 79)
    assert Window() == Window(0, None) == Window(None, None)
    assert Window(5).length is None
    assert Window(5).steps_to_record is None


@pytest.mark.parametrize("bad", [True, False, 1.0, "20", -1, [1]])
def test_constructor_rejects_non_ints(bad: object) -> None:
    with pytest.raises(ConfigError, match="start"):
        Window(bad, 100)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="end"):
        Window(0, bad)  # type: ignore[arg-type]


def test_end_must_follow_start_and_message_names_fields() -> None:
    with pytest.raises(ConfigError) as info:
        Window.from_mapping({"profile_token_start": 80, "profile_token_end": 20})
    assert str(info.value) == "profile_token_end must be > profile_token_start (got profile_token_start=80, profile_token_end=20)"
    with pytest.raises(ConfigError, match=r"end must be > start \(got start=5, end=5\)"):
        Window(5, 5)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("20:80", Window(20, 80)), ("20:", Window(20)), (":80", Window(0, 80)), (":", Window()), (" 20 : 80 ", Window(20, 80))],
)
def test_parse_forms(text: str, expected: Window) -> None:
    assert Window.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("80:20", "window end must be > window start"),
        ("a:b", "window start must be a non-negative integer or empty (got 'a'"),
        ("1:2:3", "exactly one ':'"),
        ("-1:5", "got '-1'"),
        ("20", "exactly one ':'"),
        ("1.5:3", "got '1.5'"),
        ("", "exactly one ':'"),
    ],
)
def test_parse_errors_are_clear(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        Window.parse(text)
    assert fragment in str(info.value)


def test_parse_rejects_non_text() -> None:
    with pytest.raises(ConfigError, match="must be text"):
        Window.parse(20)  # type: ignore[arg-type]


def test_from_mapping_both_spellings() -> None:
    assert Window.from_mapping({"start": 1, "end": 4}) == Window(1, 4)
    # verl documents profile_token_start/end as response-token indices: that spelling means tokens.
    assert Window.from_mapping({"profile_token_start": 20, "profile_token_end": 80}) == Window(20, 80, unit="tokens")
    assert Window.from_mapping({"profile_token_end": 80}) == Window(0, 80, unit="tokens")
    assert Window.from_mapping({}) == Window()


def test_units() -> None:
    assert Window.parse("20:80 tokens") == Window(20, 80, unit="tokens")
    assert Window.parse(" 20 :  tokens ") == Window(20, unit="tokens")
    assert Window.parse("20:80 steps") == Window(20, 80) == Window.parse("20:80")
    assert Window.from_mapping({"start": 2, "end": 9, "unit": "tokens"}) == Window(2, 9, unit="tokens")
    assert Window.from_mapping({"profile_token_start": 2, "unit": "steps"}) == Window(2)
    assert str(Window(20, 80, unit="tokens")) == "20:80 tokens"
    assert Window(20, 80, unit="tokens").slug() == "t20-80"
    assert Window(3, 9, unit="tokens").clip(5) == Window(3, 5, unit="tokens")
    assert Window(3, 9, unit="tokens").in_steps() == Window(3, 9)
    assert Window(3, 9, unit="tokens") != Window(3, 9)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Window(1, 5, unit="token"), "unit must be one of ['steps', 'tokens'] (got 'token')"),
        (lambda: Window(1, 5, unit=None), "unit must be one of ['steps', 'tokens'] (got None)"),
        (lambda: Window.parse("1:5 tokenz"), "window unit must be one of ['steps', 'tokens'] (got 'tokenz')"),
        (lambda: Window.from_mapping({"start": 1, "unit": 3}, path="w"), "w: unit must be one of ['steps', 'tokens'] (got 3)"),
    ],
)
def test_bad_units_name_the_field_the_value_and_the_rule(make: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        make()  # type: ignore[operator]
    assert str(info.value) == message


def test_from_mapping_mixed_and_unknown_keys() -> None:
    with pytest.raises(ConfigError, match="not both"):
        Window.from_mapping({"start": 1, "profile_token_end": 5})
    with pytest.raises(ConfigError, match="did you mean 'profile_token_start'"):
        Window.from_mapping({"profile_token_strat": 1})
    with pytest.raises(ConfigError, match="did you mean 'end'"):
        Window.from_mapping({"start": 1, "edn": 5})


def test_contains_and_clip() -> None:
    w = Window(2, 5)
    assert [k for k in range(8) if w.contains(k)] == [2, 3, 4]
    assert w.clip(2) is None
    assert w.clip(4) == Window(2, 4)
    assert w.clip(100) == w
    assert Window(3).clip(10) == Window(3, 10)


def test_slug_and_str() -> None:
    assert Window(20, 80).slug() == "w20-80"
    assert Window(20).slug() == "w20-end"
    assert str(Window(0, 80)) == "0:80"


# -- properties ----------------------------------------------------------------------------------


@given(windows())
def test_str_round_trips_through_parse(w: Window) -> None:
    assert Window.parse(str(w)) == w


@given(windows(), st.integers(min_value=0, max_value=3 * 10**6))
def test_contains_is_half_open(w: Window, step: int) -> None:
    assert w.contains(step) == (w.start <= step and (w.end is None or step < w.end))


@given(windows())
def test_skip_plus_record_is_end(w: Window) -> None:
    if w.end is None:
        assert w.steps_to_record is None
    else:
        assert w.steps_to_skip + w.steps_to_record == w.end  # type: ignore[operator]


@given(bounds, bounds)
def test_check_bounds_accepts_exactly_the_valid_pairs(start: int | None, end: int | None) -> None:
    valid = end is None or end > (start or 0)
    if valid:
        assert check_bounds(start, end) == (start or 0, end)
        assert Window(start, end).start == (start or 0)
    else:
        with pytest.raises(ConfigError):
            Window(start, end)


@given(st.one_of(st.booleans(), st.floats(), st.text(), st.integers(max_value=-1), st.lists(st.integers())))
def test_every_invalid_bound_raises_config_error(bad: object) -> None:
    for args in ((bad, None), (0, bad)):
        with pytest.raises(ConfigError):
            Window(*args)  # type: ignore[arg-type]


@given(st.text(max_size=12))
def test_parse_never_raises_anything_but_config_error(text: str) -> None:
    try:
        w = Window.parse(text)
    except ConfigError:
        return
    assert Window.parse(str(w)) == w


@given(st.dictionaries(st.sampled_from(["start", "end", "profile_token_start", "profile_token_end", "stop"]), bounds))
def test_from_mapping_never_raises_anything_but_config_error(data: dict[str, int | None]) -> None:
    with contextlib.suppress(ConfigError):
        Window.from_mapping(data)
