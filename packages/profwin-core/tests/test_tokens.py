"""The token-window rule (profwin.tokens) against simulated batches, with property tests.

A simulated engine admits requests at given steps, lets each one's prefill end some steps
later (chunked prefill, staggered admission) and then produces one token per step until its
length; the rule sees each step's produced token indices, exactly what the engine plugins feed
it. The real engines are tested in integration_tests/vllm and integration_tests/sglang.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from profwin import ConfigError, ProfileSpec, Session, Window
from profwin.cli import main
from profwin.tokens import TOKEN_BASE, StepTokens, TokenRule, decode, encode, max_steps, parse_step_tokens
from profwin.traces import summarize


def simulate(first_tokens: list[int], lengths: list[int]) -> list[list[tuple[int, int]]]:
    """Per step, the (request, token index) pairs produced: request ``r`` produces its token 0
    at step ``first_tokens[r]`` and one more token per step until it has ``lengths[r]``."""
    last = max(f + n for f, n in zip(first_tokens, lengths, strict=True))
    return [
        [(r, step - f) for r, (f, n) in enumerate(zip(first_tokens, lengths, strict=True)) if 0 <= step - f < n]
        for step in range(last + 2)
    ]


def run(window: Window, steps: list[list[tuple[int, int]]]) -> list[int]:
    """The steps the rule records."""
    rule = TokenRule(window)
    recorded = []
    for step, produced in enumerate(steps):
        if rule.step([index for _, index in produced]) in ("open", "record"):
            recorded.append(step)
    return recorded


def test_the_field_measurement() -> None:
    """8 requests, the last one's first token 6 steps after the first's (field.md): window 4:12
    records from the first request's token 4 to the last one's token 11, every token of all."""
    steps = simulate([0, 0, 1, 2, 3, 4, 5, 6], [24] * 8)
    recorded = run(Window(4, 12, unit="tokens"), steps)
    assert recorded == list(range(4, 18))
    covered = {(r, k) for s in recorded for r, k in steps[s]}
    assert all((r, k) in covered for r in range(8) for k in range(4, 12))


def test_the_cap_bounds_late_requests() -> None:
    """Requests admitted one after another keep producing tokens in the window for 35 steps; the
    recording stops at twice the window's length all the same."""
    steps = simulate([0, 5, 10, 15, 20, 25], [100] * 6)
    assert run(Window(0, 10, unit="tokens"), steps) == list(range(20))


def test_a_gap_closes_the_window_for_good() -> None:
    """Nothing in the window at step 3: it closes there and never reopens for the late request."""
    steps = simulate([0, 6], [3, 3])
    assert run(Window(0, 3, unit="tokens"), steps) == [0, 1, 2]


def test_an_open_window_records_while_tokens_come() -> None:
    steps = simulate([0, 2], [5, 5])
    assert run(Window(3, None, unit="tokens"), steps) == [3, 4, 5, 6]
    assert max_steps(Window(3, None, unit="tokens")) is None


def test_never_reached() -> None:
    rule = TokenRule(Window(50, 60, unit="tokens"))
    assert {rule.step([k]) for k in range(10)} == {"skip"}
    assert (rule.state, rule.opened_at, rule.steps) == ("waiting", None, 10)


def test_encoding_round_trips_and_refuses_anything_else() -> None:
    for window in (Window(0, 1, unit="tokens"), Window(20, 80, unit="tokens"), Window(7, unit="tokens")):
        assert decode(*encode(window)) == window
    assert encode(Window(20, 80, unit="tokens")) == (TOKEN_BASE + 20, 60)
    for start, count in ((20, 60), (TOKEN_BASE - 1, 5), (True, 5), (TOKEN_BASE, -1), (TOKEN_BASE, None), ("x", 1), (1 << 40, 3)):
        assert decode(start, count) is None


def test_the_annotation_names_what_the_step_held() -> None:
    held = StepTokens.of(2, [9, 3, 5, 4], Window(4, 12, unit="tokens"), 2, 59, session_step=7)
    name = held.span_name()
    assert name == (
        "profwin.tokens window_step=2 decoding=4 token_min=3 token_median=4 token_max=9 in_window=3 prefilling=2 "
        "prefill_tokens=59 session_step=7"
    )
    assert parse_step_tokens(name) == held
    empty = StepTokens.of(0, [], Window(4, 12, unit="tokens"), 1, 64, session_step=0)
    assert empty.span_name().startswith("profwin.tokens window_step=0 decoding=0 token_min=- token_median=- token_max=-")
    # An open window counts every index from its start.
    assert StepTokens.of(0, [1, 8, 30], Window(5, unit="tokens"), 0, 0).in_window == 2


# -- properties: the rule's promises (docs/window.md) ------------------------------------------------

batches = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(min_value=0, max_value=60), min_size=n, max_size=n),
        st.lists(st.integers(min_value=1, max_value=80), min_size=n, max_size=n),
    )
)


@st.composite
def token_windows(draw: st.DrawFn) -> Window:
    start = draw(st.integers(min_value=0, max_value=40))
    end = draw(st.one_of(st.none(), st.integers(min_value=start + 1, max_value=start + 40)))
    return Window(start, end, unit="tokens")


@given(token_windows(), batches)
def test_the_rule_keeps_its_promises(window: Window, batch: tuple[list[int], list[int]]) -> None:
    first_tokens, lengths = batch
    steps = simulate(first_tokens, lengths)
    recorded = run(window, steps)
    inside = [s for s, produced in enumerate(steps) if any(window.contains(k) for _, k in produced)]
    if not inside:
        assert recorded == []
        return
    # It opens at the first step with a token in the window, and the steps are contiguous.
    assert recorded[0] == inside[0]
    assert recorded == list(range(recorded[0], recorded[-1] + 1))
    # Every recorded step produces a token in the window for at least one request.
    assert all(any(window.contains(k) for _, k in steps[s]) for s in recorded)
    # Bounded: the window's length plus an allowance of the same length.
    if window.end is not None:
        assert len(recorded) <= 2 * (window.end - window.start)
    # One request (the one that opened it) has all its tokens start..end-1 recorded, or as many
    # as it produced.
    openers = [r for r, k in steps[recorded[0]] if window.contains(k)]
    wanted = range(window.start, window.end if window.end is not None else max(lengths))
    assert any(
        all(first_tokens[r] + k in recorded for k in wanted if k < lengths[r] and k >= steps_index(steps, recorded[0], r))
        for r in openers
    )


def steps_index(steps: list[list[tuple[int, int]]], step: int, request: int) -> int:
    """The token index ``request`` produces at ``step``."""
    return next(k for r, k in steps[step] if r == request)


@pytest.mark.parametrize("window", [Window(0, 5, unit="tokens"), Window(2, unit="tokens")])
def test_closed_stays_closed(window: Window) -> None:
    rule = TokenRule(window)
    decisions = [rule.step(tokens) for tokens in ([3], [4], [], [3], [4])]
    assert decisions == ["open", "record", "close", "skip", "skip"]
    assert (rule.opened_at, rule.recorded, rule.state) == (0, 2, "closed")


def test_in_a_session_one_step_is_one_token(tmp_path: Path) -> None:
    """profwin.Session counts the caller's steps: called once per generated token, a token window
    records the same steps as the step window of the same numbers (real torch)."""
    torch = pytest.importorskip("torch")
    spec = ProfileSpec(window=Window.parse("2:5 tokens"), output_dir=tmp_path)
    with Session(spec) as session:
        for _ in range(8):
            torch.ones(4).sum()
            session.step()
    (trace,) = session.artifacts
    assert trace.steps == Window(2, 5, unit="tokens")
    assert trace.path.name.startswith("profwin_rank0_t2-5.")
    assert [s.number for s in summarize(trace.path, top=0).steps] == [2, 3, 4]


def test_the_trace_tools_refuse_a_token_window(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the trace tools pick steps"):
        summarize(tmp_path / "any.json", window="2:5 tokens")


def test_profwin_window_explains_a_token_window(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["window", "20:80 tokens"]) == 0
    out = capsys.readouterr().out
    assert "the steps that produce response tokens [20, 80)" in out
    assert "at most 120 step(s)" in out
    assert "engines without profwin's plugin record steps 20:80" in out
