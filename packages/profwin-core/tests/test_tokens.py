"""The token-window rule (profwin.runtime.tokens) against simulated batches, with property tests.

A simulated engine admits requests at given steps, lets each one's prefill end some steps
later (chunked prefill, staggered admission) and then produces one token per step until its
length; the rule sees each step's produced token indices, exactly what the engine plugins feed
it. The real engines are tested in integration_tests/vllm and integration_tests/sglang.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profwin import ProfileSpec, Session, Window
from profwin.cli import main
from profwin.demo import count_step_markers
from profwin.runtime.tokens import (
    TOKEN_BASE,
    StepTokens,
    TokenRule,
    decode_tokens,
    encode_tokens,
    max_steps,
    parse_step_tokens,
    prefill_only,
)
from profwin.window import MAX_STEP


def simulate(first_tokens: list[int], lengths: list[int]) -> list[list[tuple[int, int]]]:
    """Per step, the (request, token index) pairs produced: request ``r`` produces its token 0
    at step ``first_tokens[r]`` and one more token per step until it has ``lengths[r]`` (an
    engine with every request prefilled in one step alongside the decodes; no idle step)."""
    last = max(f + n for f, n in zip(first_tokens, lengths, strict=True))
    steps = [
        [(r, step - f) for r, (f, n) in enumerate(zip(first_tokens, lengths, strict=True)) if 0 <= step - f < n]
        for step in range(last)
    ]
    return [produced for produced in steps if produced]


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


def test_a_step_that_decodes_outside_the_window_closes_it_for_good() -> None:
    """Step 3 decodes token 3, outside 0:3: the window closes there and never reopens for the
    request admitted later."""
    steps = [[(0, 0)], [(0, 1)], [(0, 2)], [(0, 3)], [(1, 0)], [(1, 1)]]
    assert run(Window(0, 3, unit="tokens"), steps) == [0, 1, 2]


def test_prefill_only_steps_keep_the_window_open() -> None:
    """The field case: window 12:20; the requests that opened it decode at steps 0..6, a request
    admitted mid-window prefills at steps 7 and 8 (a chunk, then its token 0), and token 19 comes
    at step 9. The window stays open across the admission, so tokens 12..19 are all recorded."""
    steps = (
        [[(0, 12 + s), (1, 12 + s)] for s in range(7)] + [[], [(2, 0)]] + [[(0, 19), (1, 19), (2, 1)], [(0, 20), (1, 20), (2, 2)]]
    )
    recorded = run(Window(12, 20, unit="tokens"), steps)
    assert recorded == list(range(10))
    rule = TokenRule(Window(12, 20, unit="tokens"))
    decisions = [rule.step([k for _, k in produced]) for produced in steps]
    assert decisions == ["open", *["record"] * 9, "close"]
    assert (rule.recorded, rule.held) == (10, 2)


def test_prefill_only_steps_are_bounded_apart() -> None:
    """At most max_steps(window) prefill-only steps are held: the trace stays bounded however
    many requests are admitted while the window is open."""
    rule = TokenRule(Window(5, 7, unit="tokens"))
    assert rule.step([5]) == "open"
    assert [rule.step([0]) for _ in range(5)] == ["record"] * 4 + ["close"]
    assert prefill_only([])
    assert prefill_only([0, 0])
    assert not prefill_only([0, 1])


def test_a_recomputation_the_engine_says_decodes_nothing_keeps_the_window_open() -> None:
    """SGLang recomputes a retracted request in a prefill batch of its own: its token 18 comes from
    a prefill there, while the requests that opened window 20:40 produce nothing. Told so
    (``decodes=False``), the rule holds that step as it holds an admission; by its token alone
    (past the request's first) the step decodes and closes the window."""
    told = TokenRule(Window(20, 40, unit="tokens"))
    assert [told.step([20, 20]), told.step([18], decodes=False), told.step([21, 21, 19], decodes=True)] == [
        "open",
        "record",
        "record",
    ]
    assert (told.recorded, told.held) == (3, 1)
    guessed = TokenRule(Window(20, 40, unit="tokens"))
    assert [guessed.step([20, 20]), guessed.step([18])] == ["open", "close"]
    decoding = TokenRule(Window(20, 40, unit="tokens"))
    assert [decoding.step([20, 20]), decoding.step([0, 0], decodes=True)] == ["open", "close"]


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
        assert decode_tokens(*encode_tokens(window)) == window
    assert encode_tokens(Window(20, 80, unit="tokens")) == (TOKEN_BASE + 20, 60)
    for start, count in ((20, 60), (TOKEN_BASE - 1, 5), (True, 5), (TOKEN_BASE, -1), (TOKEN_BASE, None), ("x", 1), (1 << 40, 3)):
        assert decode_tokens(start, count) is None


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


@st.composite
def token_windows(draw: st.DrawFn) -> Window:
    start = draw(st.integers(min_value=0, max_value=40))
    end = draw(st.one_of(st.none(), st.integers(min_value=start + 1, max_value=start + 40)))
    return Window(start, end, unit="tokens")


Request = tuple[int, int, int]  # (arrival step, prefill chunks, response tokens)
requests = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 3), st.integers(1, 60)), min_size=1, max_size=10)


def engine(batch: list[Request], *, mixed: bool, running: int) -> list[list[tuple[int, int]]]:
    """An engine's steps as SGLang schedules them, the (request, token index) pairs each produces.

    Requests wait from their arrival until one of ``running`` slots is free; an admitted request
    prefills chunk by chunk, and its last chunk produces its token 0. A step prefills whatever
    has chunks left (together, one chunk each) and, with ``mixed`` (``--enable-mixed-chunk``),
    also decodes the requests already past their prefill; without it, a step that prefills
    decodes nothing (prefill first, as SGLang does). Nothing runs while nothing is admitted."""
    arrival = {r: a for r, (a, _, _) in enumerate(batch)}
    chunks = {r: c for r, (_, c, _) in enumerate(batch)}
    made = dict.fromkeys(arrival, 0)
    admitted: list[int] = []
    clock, steps = 0, []
    while any(made[r] < batch[r][2] for r in made):
        for r in sorted(arrival, key=lambda r: (arrival[r], r)):
            if r not in admitted and arrival[r] <= clock and len([q for q in admitted if made[q] < batch[q][2]]) < running:
                admitted.append(r)
        active = [r for r in admitted if made[r] < batch[r][2]]
        if not active:
            clock = min(arrival[r] for r in arrival if r not in admitted)
            continue
        prefilling = [r for r in active if chunks[r] > 0]
        decoding = [r for r in active if chunks[r] == 0] if mixed or not prefilling else []
        produced = [(r, made[r]) for r in decoding]
        for r in prefilling:
            chunks[r] -= 1
            if chunks[r] == 0:
                produced.append((r, 0))
        for r, _ in produced:
            made[r] += 1
        steps.append(produced)
        clock += 1
    return steps


@settings(max_examples=300, deadline=None)
@given(token_windows(), requests, st.booleans(), st.integers(1, 4))
def test_the_rule_keeps_its_promises(window: Window, batch: list[Request], mixed: bool, running: int) -> None:
    steps = engine(batch, mixed=mixed, running=running)
    recorded = run(window, steps)
    inside = [s for s, produced in enumerate(steps) if any(window.contains(k) for _, k in produced)]
    if not inside:
        assert recorded == []
        return
    # It opens at the first step with a token in the window, and the steps are contiguous.
    assert recorded[0] == inside[0]
    assert recorded == list(range(recorded[0], recorded[-1] + 1))
    # Every recorded step produces a token in the window, or decodes nothing (prefill-only).
    with_tokens = [s for s in recorded if s in inside]
    held = [s for s in recorded if s not in inside]
    assert all(prefill_only([k for _, k in steps[s]]) for s in held)
    # It closes at a step that decodes with no token of the window (or at a cap, or at the end).
    after = recorded[-1] + 1
    cap = max_steps(window)
    if after < len(steps) and (cap is None or (len(with_tokens) < cap and len(held) < cap)):
        assert after not in inside
        assert not prefill_only([k for _, k in steps[after]])
    # Bounded: the window's length plus an allowance of the same length, prefill-only steps apart.
    if cap is not None:
        assert len(with_tokens) <= cap
        assert len(held) <= cap
    # One request (one that opened it) has all its tokens start..end-1 recorded, or as many as it
    # produced, unless more than max_steps prefill-only steps came between them.
    openers = [r for r, k in steps[recorded[0]] if window.contains(k)]
    lengths = [n for _, _, n in batch]
    wanted = range(window.start, window.end if window.end is not None else max(lengths))
    token_step = {(r, k): s for s, produced in enumerate(steps) for r, k in produced}
    if cap is None or len(held) < cap:
        assert any(
            all(token_step[r, k] in recorded for k in wanted if steps_index(steps, recorded[0], r) <= k < lengths[r])
            for r in openers
        )


def steps_index(steps: list[list[tuple[int, int]]], step: int, request: int) -> int:
    """The token index ``request`` produces at ``step``."""
    return next(k for r, k in steps[step] if r == request)


@pytest.mark.parametrize(("window", "closer"), [(Window(0, 5, unit="tokens"), 7), (Window(2, unit="tokens"), 1)])
def test_closed_stays_closed(window: Window, closer: int) -> None:
    rule = TokenRule(window)
    decisions = [rule.step(tokens) for tokens in ([3], [4], [closer], [3], [4], [0])]
    assert decisions == ["open", "record", "close", "skip", "skip", "skip"]
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
    assert count_step_markers(trace.path) == [2, 3, 4]


def test_profwin_window_explains_a_token_window(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["window", "20:80 tokens"]) == 0
    out = capsys.readouterr().out
    assert "the steps that produce response tokens [20, 80)" in out
    assert "at most 120 step(s) with one and 120 prefill-only step(s)" in out
    assert "engines without profwin's plugin record steps 20:80" in out


@given(st.integers(min_value=TOKEN_BASE - 2, max_value=TOKEN_BASE + (1 << 31) + 2), st.integers(-2, 1 << 33))
def test_decode_answers_none_for_what_encode_never_makes(start: int, count: int) -> None:
    """Any client can send such numbers to an engine, where decode runs: it never raises."""
    window = decode_tokens(start, count)
    assert window is None or encode_tokens(window) == (start, count)


def test_decode_at_the_edges_of_the_step_counter() -> None:
    for first, count in ((MAX_STEP, 1), (MAX_STEP - 1, 2), (1, MAX_STEP), (MAX_STEP + 1, 0)):
        assert decode_tokens(TOKEN_BASE + first, count) is None
    assert decode_tokens(TOKEN_BASE + MAX_STEP, 0) == Window(MAX_STEP, None, unit="tokens")
    assert decode_tokens(TOKEN_BASE, MAX_STEP) == Window(0, MAX_STEP, unit="tokens")
