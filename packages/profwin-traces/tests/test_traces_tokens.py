"""What each step held: the ``profwin.tokens`` annotation, written by real torch and read back.

The traces are recorded here by real torch on CPU, a ``record_function`` named by
:meth:`StepTokens.span_name` around (or next to) each step of a small loop, as a token window's
engine plugin writes it; what summarize, diff and trim report is checked against what was written.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import profwin
from profwin.errors import ConfigError
from profwin_traces import StepTokens, diff, parse_step_tokens, render_diff, render_summary, summarize, trim

# -- the name: one form, written and read by the same module -------------------------------------


@given(
    window_step=st.integers(0, 10**6),
    tokens=st.lists(st.integers(0, 10**6), max_size=40),
    window=st.integers(0, 1000).flatmap(lambda start: st.tuples(st.just(start), st.integers(start + 1, 1001))),
    prefills=st.lists(st.integers(1, 10**4), max_size=8),
)
def test_the_name_reads_back_as_written(
    window_step: int, tokens: list[int], window: tuple[int, int], prefills: list[int]
) -> None:
    held = StepTokens.of(window_step, tokens, window, len(prefills), sum(prefills))
    name = held.span_name()
    assert parse_step_tokens(name) == held
    assert "  " not in name
    assert name.startswith("profwin.tokens window_step=")
    found = sorted(tokens)
    assert held.token_median == (found[(len(found) - 1) // 2] if found else None)  # the lower median
    assert held.in_window == sum(1 for k in tokens if window[0] <= k < window[1])


def test_the_documented_example_reads() -> None:
    name = "profwin.tokens window_step=3 decoding=8 token_min=20 token_median=23 token_max=27 in_window=8 prefilling=1 prefill_tokens=47"
    assert parse_step_tokens(name) == StepTokens(3, 8, 20, 23, 27, 8, 1, 47)
    assert parse_step_tokens("execute_context_1(6)_generation_0(0)") is None
    assert parse_step_tokens("profwin.tokenizer warm-up") is None


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("profwin.tokens window_step=1 decoding=0 token_min=- token_median=- token_max=- in_window=0 prefilling=0", "does not follow"),
        ("profwin.tokens decoding=0 window_step=1 token_min=- token_median=- token_max=- in_window=0 prefilling=0 prefill_tokens=0", "in this order"),
        ("profwin.tokens window_step=1  decoding=0 token_min=- token_median=- token_max=- in_window=0 prefilling=0 prefill_tokens=0", "one space apart"),
        ("profwin.tokens window_step=1.5 decoding=0 token_min=- token_median=- token_max=- in_window=0 prefilling=0 prefill_tokens=0", "non-negative ints"),
        ("profwin.tokens window_step=-1 decoding=0 token_min=- token_median=- token_max=- in_window=0 prefilling=0 prefill_tokens=0", "non-negative ints"),
        ("profwin.tokens window_step=1 decoding=2 token_min=- token_median=- token_max=- in_window=0 prefilling=0 prefill_tokens=0", "must all be ints when decoding=2"),
        ("profwin.tokens window_step=1 decoding=0 token_min=3 token_median=3 token_max=3 in_window=0 prefilling=0 prefill_tokens=0", "must all be '-'"),
        ("profwin.tokens window_step=1 decoding=2 token_min=5 token_median=4 token_max=9 in_window=0 prefilling=0 prefill_tokens=0", "token_min <= token_median <= token_max"),
        ("profwin.tokens window_step=1 decoding=2 token_min=4 token_median=4 token_max=9 in_window=3 prefilling=0 prefill_tokens=0", "at most decoding=2"),
        ("profwin.tokens window_step=1 decoding=0 token_min=- token_median=- token_max=- in_window=0 prefilling=2 prefill_tokens=1", "at least prefilling=2"),
    ],
)  # fmt: skip
def test_a_name_off_the_form_is_refused_by_rule(name: str, rule: str) -> None:
    with pytest.raises(ConfigError, match=r"profwin\.tokens") as caught:
        parse_step_tokens(name)
    assert rule in str(caught.value)
    assert repr(name)[:40] in str(caught.value)  # the value, quoted


def test_bad_values_are_refused_when_written() -> None:
    with pytest.raises(ConfigError, match=r"window_step: must be a non-negative int \(got True\)"):
        StepTokens(True, 0, None, None, None, 0, 0, 0)  # type: ignore[arg-type]


# -- real torch traces ----------------------------------------------------------------------------


def _held(k: int) -> StepTokens:
    """What loop step ``k`` is said to hold: a prefill at step 0, then k+1 requests decoding
    (none at step 3), their tokens k..2k, the token window 2:6."""
    tokens = [] if k == 3 else list(range(k, 2 * k + 1))
    return StepTokens.of(k, tokens, (2, 6), 1 if k == 0 else 0, 12 if k == 0 else 0)


def _work(torch: Any, layer: Any) -> None:
    layer(torch.randn(4, 32)).relu()


@pytest.fixture(scope="module")
def session_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """profwin's torch driver, steps 0..5 recorded; each step's annotation around its work,
    inside the driver's ``ProfilerStep#k``."""
    torch = pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("tokens")
    layer = torch.nn.Linear(32, 32)
    spec = profwin.ProfileSpec(window=profwin.Window(0, 6), output_dir=out)
    with torch.inference_mode(), profwin.Session(spec) as session:
        for k in range(6):
            with torch.profiler.record_function(_held(k).span_name()):
                _work(torch, layer)
            session.step()
    (artifact,) = session.artifacts
    return artifact.path


def _engine_trace(
    path: Path,
    step_name: Callable[[int], str],
    *,
    around: bool,
    note: Callable[[int], str] = lambda k: _held(k).span_name(),
    before: bool = False,
) -> Path:
    """An engine's shape without a schedule: each step is a span named like the engine's own
    marker (``step_name(k)``), its annotation (named ``note(k)``) either ``around`` it or right
    after it (``before`` it) on the same thread."""
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(32, 32)
    rf = torch.profiler.record_function
    with torch.inference_mode(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for k in range(6):
            if around:
                with rf(note(k)), rf(step_name(k)):
                    _work(torch, layer)
            else:
                if before:
                    with rf(note(k)):
                        pass
                with rf(step_name(k)):
                    _work(torch, layer)
                if not before:
                    with rf(note(k)):
                        pass
    prof.export_chrome_trace(str(path))
    return path


def _names(path: Path) -> list[str]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [e["name"] for e in json.load(f)["traceEvents"] if str(e.get("name", "")).startswith("profwin.tokens ")]


@pytest.fixture(params=["fast", "stdlib"])
def reader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both readers: the ``fast`` extra's columns, and the standard library's row by row."""
    from profwin_traces.columnar import column_decoder
    from profwin_traces.reader import fast_decoder, numpy_or_none

    monkeypatch.setenv("PROFWIN_TRACES_FAST", "1" if request.param == "fast" else "0")
    for cached in (numpy_or_none, column_decoder, fast_decoder):
        cached.cache_clear()
    yield request.param
    monkeypatch.undo()
    for cached in (numpy_or_none, column_decoder, fast_decoder):
        cached.cache_clear()


@pytest.mark.torch
def test_summarize_shows_what_each_step_of_a_session_held(session_trace: Path, reader: str) -> None:
    assert len(_names(session_trace)) == 6  # the trace holds the names torch wrote
    s = summarize(session_trace)
    assert [st.number for st in s.steps] == list(range(6))
    assert [st.tokens for st in s.steps] == [_held(k) for k in range(6)]
    assert [d["tokens"] for d in s.to_dict()["steps"]] == [attrs.asdict(_held(k)) for k in range(6)]  # --json
    text = render_summary(summarize(session_trace, window="2:5"))
    assert "tokens    3 of 3 steps annotated: 8 response tokens (" in text  # steps 2, 3, 4: 3 + 0 + 5
    row = next(line for line in text.splitlines() if line.startswith("    4*"))
    assert row.split()[6:12] == ["4", "5", "4/6/8", "2", "0", "0"]  # w.step, decode, tokens, in win, prefill, prompt
    assert not any(op.name.startswith("profwin.tokens") for op in s.top_ops)  # an annotation, not an operator


@pytest.mark.torch
@pytest.mark.parametrize("around", [True, False], ids=["around", "next-to"])
@pytest.mark.parametrize(
    "step_name",
    [lambda k: "execute_context_1(6)_generation_0(0)" if k == 0 else "execute_context_0(0)_generation_1(1)",
     lambda k: "step[EXTEND bs=1 toks=6]" if k == 0 else "step[DECODE bs=1]"],
    ids=["vllm", "sglang"],
)  # fmt: skip
def test_an_engines_steps_get_their_annotations(
    tmp_path: Path, around: bool, step_name: Callable[[int], str], reader: str
) -> None:
    trace = _engine_trace(tmp_path / "engine.pt.trace.json", step_name, around=around)
    s = summarize(trace)
    assert s.producer in ("vllm", "sglang")
    assert [st.label for st in s.steps] == [step_name(k) for k in range(6)]
    assert [st.tokens for st in s.steps] == [_held(k) for k in range(6)]
    assert not s.notes


@pytest.mark.torch
def test_annotations_out_of_step_with_the_steps_are_named(tmp_path: Path) -> None:
    """Written before each step's span, overlapping nothing, an annotation counts for the step
    before it (where its process was): the window steps no longer advance with the steps, and
    the notes say so instead of showing them silently shifted."""
    trace = _engine_trace(tmp_path / "before.pt.trace.json", lambda k: "step[DECODE bs=1]", around=False, before=True)
    s = summarize(trace)
    assert [st.tokens for st in s.steps] == [_held(0), *(_held(k) for k in range(2, 6)), None]
    assert any("window_step does not advance one for one with the steps" in note for note in s.notes)
    assert any("1 profwin.tokens spans fall on a step annotated otherwise already" in note for note in s.notes)


@pytest.mark.torch
def test_trim_keeps_the_annotations_of_the_steps_it_keeps(session_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "steps2-4.pt.trace.json.gz"
    trim(session_trace, "2:4", out)
    assert [st.tokens for st in summarize(out).steps] == [_held(2), _held(3)]


@pytest.mark.torch
def test_diff_compares_what_the_steps_held(session_trace: Path, tmp_path: Path) -> None:
    other = _engine_trace(
        tmp_path / "b.pt.trace.json", lambda k: f"ProfilerStep#{k}", around=True,
        note=lambda k: StepTokens.of(k, [k] * 2, (2, 6), 0, 0).span_name(),
    )  # fmt: skip
    d = diff(session_trace, other)
    assert [(c.step, c.a_tokens, c.b_tokens) for c in d.steps] == [
        (k, _held(k), StepTokens.of(k, [k] * 2, (2, 6), 0, 0)) for k in range(6)
    ]
    text = render_diff(d)
    assert "held  A: 6 steps annotated; a step: 2.8 requests decoding, 2.0 prompt tokens of 0.2 prefills" in text
    assert "held  B: 6 steps annotated; a step: 2.0 requests decoding" in text
    assert "1 dec (0..0), 12 prompt" in text
    assert "2 dec (0..0), 0 prompt" in text
    assert not d.unchanged


@pytest.mark.torch
def test_a_malformed_annotation_is_left_out_with_a_note(tmp_path: Path) -> None:
    bad = "profwin.tokens window_step=0 decoding=x"
    trace = _engine_trace(
        tmp_path / "bad.pt.trace.json", lambda k: "step[DECODE bs=1]", around=True,
        note=lambda k: _held(k).span_name() if k else bad,
    )  # fmt: skip
    s = summarize(trace)
    assert [st.tokens for st in s.steps] == [None, *(_held(k) for k in range(1, 6))]
    (note,) = s.notes
    assert note.startswith("1 profwin.tokens spans do not follow the annotation's form and are left out")
    assert bad in note


@pytest.mark.torch
def test_a_trace_without_annotations_reads_as_before(tmp_path: Path) -> None:
    trace = _engine_trace(
        tmp_path / "plain.pt.trace.json", lambda k: f"ProfilerStep#{k}", around=True, note=lambda k: f"span_{k}"
    )
    s = summarize(trace)
    assert all(st.tokens is None for st in s.steps)
    text = render_summary(s)
    for added in ("w.step", "tokens ", "profwin.tokens"):
        assert added not in text
    header = next(line for line in text.splitlines() if line.split()[:2] == ["step", "wall"])
    assert header.split() == ["step", "wall", "events", "bytes", "marker"]


def test_the_trace_tools_refuse_a_token_window(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the trace tools pick steps"):
        summarize(tmp_path / "any.json", window="2:5 tokens")
