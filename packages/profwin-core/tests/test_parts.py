"""A long window is written as consecutive part traces (profwin.parts), on real torch (CPU).

The proof is by counting: the step markers of all parts together are the window's steps, each
exactly once, and each part's markers are the steps its name and provenance say.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest

from profwin import ConfigError, ProfileSpec, Session, Window
from profwin.demo import count_step_markers
from profwin.errors import WindowWarning
from profwin.parts import PartsMemoryError
from profwin.provenance import PROVENANCE_KEY

torch = pytest.importorskip("torch", reason="the torch driver tests need torch (scripts/bootstrap.sh installs a CPU build)")


def header(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return dict(json.load(f)[PROVENANCE_KEY])


def loop(spec: ProfileSpec, steps: int, *, fail_at: int | None = None) -> Session:
    """A real torch loop of ``steps`` steps; ``MemoryError`` inside step ``fail_at``."""
    with Session(spec) as session:
        for i in range(steps):
            torch.ones(2).sum()
            if i == fail_at:
                raise MemoryError("no room")
            session.step()
    return session


def all_markers(session: Session) -> list[int]:
    return [k for a in session.artifacts for k in count_step_markers(a.path)]


@pytest.mark.parametrize(
    ("window", "steps", "part_steps", "expected_parts"),
    [
        ("0:10", 10, 3, [(0, 3), (3, 6), (6, 9), (9, 10)]),
        ("2:9", 12, 3, [(2, 5), (5, 8), (8, 9)]),
        ("0:", 7, 3, [(0, 3), (3, 6), (6, 7)]),
        ("4:", 10, 2, [(4, 6), (6, 8), (8, 10)]),
        ("0:6", 6, 6, [(0, 6)]),
    ],
)
def test_every_step_is_in_exactly_one_part(run_loop, spec_in, window: str, steps: int, part_steps: int, expected_parts) -> None:  # type: ignore[no-untyped-def]
    session = run_loop(spec_in(window, part_steps=part_steps), steps)
    held = [count_step_markers(a.path) for a in session.artifacts]
    assert held == [list(range(a, b)) for a, b in expected_parts]
    assert [a.steps for a in session.artifacts] == [Window(a, b) for a, b in expected_parts]
    chosen = Window.parse(window).clip(steps)
    assert chosen is not None
    assert all_markers(session) == list(range(chosen.start, chosen.end or steps))  # no gap, no duplicate


def test_window_of_n_steps_in_parts_of_m_holds_n_markers(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    n, m = 100, 7
    session = run_loop(spec_in(f"0:{n}", part_steps=m), n + 5)
    assert len(session.artifacts) == -(-n // m)
    assert all_markers(session) == list(range(n))


def test_parts_carry_window_part_number_and_one_session(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    session = run_loop(spec_in("1:8", part_steps=3), 10)
    names = [a.path.name for a in session.artifacts]
    assert names == sorted(names)
    assert [n.split(".")[0] for n in names] == [
        "profwin_rank0_w1-8_part0001_s1-4",
        "profwin_rank0_w1-8_part0002_s4-7",
        "profwin_rank0_w1-8_part0003_s7-8",
    ]
    origins = [header(a.path) for a in session.artifacts]
    assert [o["part"] for o in origins] == [1, 2, 3]
    assert [o["first_step"] for o in origins] == [1, 4, 7]
    assert {o["window"] for o in origins} == {"1:8"}
    assert len({o["session"] for o in origins}) == 1


def test_a_window_that_fits_in_one_part_is_one_plain_trace(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    session = run_loop(spec_in("2:5", part_steps=3), 10)
    (artifact,) = session.artifacts
    assert artifact.path.name.startswith("profwin_rank0_w2-5.")
    assert "part" not in header(artifact.path)


def test_no_bounds_is_one_trace(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    session = run_loop(spec_in("0:", part_steps=None, part_events=None), 30)
    assert [count_step_markers(a.path) for a in session.artifacts] == [list(range(30))]


def test_event_bound_sizes_the_parts_after_the_first(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    """The first part (5 steps) is bounded by steps; each part tells the session how many events a
    step holds, and the next one is cut to stay under part_events. Each later part's length is
    checked against the events of the part before it, as written: a part's fixed events weigh on
    its events per step differently from one torch to another (on torch 2.11, H200 machine, some
    parts were 1 step where torch 2.13 here makes 2)."""
    first = run_loop(spec_in("0:5", part_steps=5), 5)
    per_step = count_events(first.artifacts[0].path) / 5
    bound = int(per_step * 2.5)
    session = run_loop(spec_in("0:20", part_steps=5, part_events=bound), 20)
    parts = [a for a in session.artifacts if a.steps is not None]
    assert parts[0].steps.length == 5
    for before, part in itertools.pairwise(parts):
        learned = count_events(before.path) / before.steps.length
        assert part.steps.length == min(5, max(1, math.floor(bound / learned)), 20 - part.steps.start)
    middle = [part.steps.length for part in parts[1:-1]]
    # 2.5 steps' worth of events: 2 steps each with torch 2.13 here, 1 or 2 with torch 2.11 on the H200.
    assert 2 in middle
    assert set(middle) <= {1, 2}
    assert all_markers(session) == list(range(20))


def count_events(path: Path) -> int:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return len(json.load(f)["traceEvents"])


def test_early_close_and_exception_keep_every_part(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="boom at step 7"), pytest.warns(WindowWarning, match="the trace holds steps 0:8"):
        run_loop(spec_in("0:20", part_steps=3), 20, fail_at=7)
    with pytest.warns(WindowWarning, match="holds steps 0:6"):
        session = run_loop(spec_in("0:20", part_steps=3), 6)  # ends right after the boundary that opened part 3
    assert all_markers(session) == list(range(6))
    assert [a.steps for a in session.artifacts] == [Window(0, 3), Window(3, 6)]


def test_out_of_memory_while_writing_a_part_names_the_window_and_keeps_the_parts(
    spec_in, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import profwin.torch_driver as driver

    export = driver._export_atomically
    calls = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("std::bad_alloc")
        return export(*args, **kwargs)

    monkeypatch.setattr(driver, "_export_atomically", failing)
    spec = spec_in("0:20", part_steps=4)
    with pytest.raises(PartsMemoryError) as caught:
        loop(spec, 20)
    message = str(caught.value)
    assert "ran out of memory recording window 0:20 at step 12" in message
    assert "the 2 part(s) already written are kept (steps 0:8)" in message
    assert "profwin_rank0_w0-20_part0001_s0-4" in message
    assert "part0002_s4-8" in message
    assert [count_step_markers(a.path) for a in caught.value.written] == [list(range(4)), list(range(4, 8))]
    assert sorted(p.name.split(".")[0] for p in spec.output_dir.glob("*.json.gz")) == [
        "profwin_rank0_w0-20_part0001_s0-4",
        "profwin_rank0_w0-20_part0002_s4-8",
    ]
    assert isinstance(caught.value, MemoryError)
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_out_of_memory_inside_a_step_names_the_parts_written(spec_in) -> None:  # type: ignore[no-untyped-def]
    spec = spec_in("0:20", part_steps=4)
    expected = r"window 0:20 at step 9 .*MemoryError.* 3 part\(s\) already written .*steps 0:10"
    with pytest.raises(PartsMemoryError, match=expected), pytest.warns(WindowWarning, match="holds steps 0:10"):
        loop(spec, 20, fail_at=9)
    assert len(list(spec.output_dir.glob("*.json.gz"))) == 3  # the part open then is written too, with step 9


@pytest.mark.parametrize(("key", "value"), [("part_steps", 0), ("part_events", -1), ("part_steps", True), ("part_events", "10")])
def test_part_bounds_are_validated(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=rf"^{key}: must be None \(no bound\) or an int in \[1, 2147483647\]"):
        ProfileSpec(**{key: value})  # type: ignore[arg-type]


def test_a_written_part_frees_its_recording_before_the_next_records(spec_in) -> None:  # type: ignore[no-untyped-def]
    """torch.profiler's objects hold reference cycles: a part's recording (Kineto's results) must be
    freed when it is written, not when Python's cyclic collector next runs (it piled up to 130 MB
    a 300-step part of the demo). Counted with the collector off."""
    import gc

    from torch.autograd.profiler import profile as autograd_profile

    def holding() -> int:
        return sum(1 for o in gc.get_objects() if isinstance(o, autograd_profile) and getattr(o, "kineto_results", None))

    gc.collect()
    before = holding()
    gc.disable()
    try:
        seen = []
        with Session(spec_in("0:12", part_steps=3)) as session:
            for _ in range(12):
                torch.ones(2).sum()
                session.step()
                seen.append(holding() - before)
    finally:
        gc.enable()
    assert len(session.artifacts) == 4
    assert max(seen) == 0
