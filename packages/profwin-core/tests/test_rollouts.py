"""The trainer-neutral rollout profiler: which rollouts (``Rollouts``), one session around each
chosen one, and nothing around the others.

Sessions run against toyserve (``example_backend/toy_engine.py``, the documented stand-in engine
behind real HTTP on 127.0.0.1): what is checked here is the profiler's own behaviour (which
rollouts, file names, faults, overlaps, router mode). Real SGLang servers behind the real
sglang-router, driven by slime's rollout seam in a Ray actor: integration_tests/sglang/test_router_slime.py.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import profwin
from profwin.errors import ArgumentTypeError
from profwin.selection import MAX_ROLLOUT_ID, Rollouts

# -- the selection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical", "chosen"),
    [
        ("3,7", "3,7", [3, 7]),
        (" 7 , 3 ,3", "3,7", [3, 7]),
        ("4", "4", [4]),
        ("3+4", "3+4", [3, 4, 5, 6]),
        ("+2", "0+2", [0, 1]),
        ("25+", "25+", list(range(25, 40))),
        ("%10", "0%10", [0, 10, 20, 30]),
        ("5%10", "5%10", [5, 15, 25, 35]),
        ("5+3%10", "5+3%10", [5, 15, 25]),
        ("0+1", "0+1", [0]),
    ],
)
def test_every_text_form_chooses_what_it_says(text: str, canonical: str, chosen: list[int]) -> None:
    rollouts = Rollouts.parse(text)
    assert str(rollouts) == canonical
    assert [i for i in range(40) if rollouts.chosen(i)] == chosen
    assert Rollouts.parse(canonical) == rollouts
    assert [i for i in range(40) if i in rollouts] == chosen


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([3, 7], "3,7"),
        ((1,), "1"),
        (5, "5"),
        ({"ids": [2, 9]}, "2,9"),
        ({"first": 3, "count": 4}, "3+4"),
        ({"every": 10}, "0%10"),
        ({"first": 1, "every": 2, "count": 3}, "1+3%2"),
        (Rollouts(first=2), "2+"),
    ],
)
def test_every_python_form_is_the_same_selection(value: object, expected: str) -> None:
    assert str(Rollouts.of(value)) == expected
    assert Rollouts.of(value) == Rollouts.parse(expected)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "",
            "rollouts: must be rollout ids like '3,7', a first id and a count like '3+4', or every N like '%10' or '5%10' (got '')",
        ),
        (
            "1-3",
            "rollouts: must be rollout ids like '3,7', a first id and a count like '3+4', or every N like '%10' or '5%10' (got '1-3')",
        ),
        ("3,,7", "(got '3,,7')"),
        ("3+0", "rollouts.count: count must be an int >= 1 and <= 9223372036854775807 (got 0)"),
        ("%0", "rollouts.every: every must be an int >= 1 and <= 9223372036854775807 (got 0)"),
        ("9" * 5000, "rollouts[0]: a rollout id must be <= 9223372036854775807 (2**63 - 1; got '9999999999999999999999"),
        ([], "rollouts: must list at least one rollout id"),
        ([1, -2], "rollouts[1]: a rollout id must be an int >= 0 and <= 9223372036854775807 (got -2)"),
        ([True], "rollouts[0]: a rollout id must be an int >= 0 (got True, a bool)"),
        ({"ids": [1], "first": 2}, "rollouts: give either ids or first/count/every, not both"),
        ({"frist": 2}, "rollouts: unknown key 'frist' (valid keys: ids, first, count, every); did you mean 'first'?"),
        ({"ids": "1,2"}, "rollouts.ids: must be a list of rollout ids (got '1,2')"),
        ({}, "rollouts: must choose some rollouts"),
        (2.5, "rollouts: must be rollout ids like '3,7'"),
        (None, "rollouts: must be rollout ids like '3,7'"),
        (list(range(10_001)), "rollouts: must list at most 10,000 ids; choose a range with FIRST+COUNT or %EVERY"),
    ],
)
def test_a_bad_selection_names_the_field_the_value_and_the_rule(value: object, message: str) -> None:
    with pytest.raises(profwin.ConfigError) as failed:
        Rollouts.of(value)
    assert message in str(failed.value)
    assert len(str(failed.value)) < 400


def test_a_rollout_id_is_checked_too() -> None:
    rollouts = Rollouts.parse("1,3")
    for bad in (-1, True, 1.0, MAX_ROLLOUT_ID + 1):
        with pytest.raises(profwin.ConfigError, match=r"^rollout_id: rollout_id must be an int >= 0"):
            rollouts.chosen(bad)  # type: ignore[arg-type]
        assert bad not in rollouts


@given(
    st.one_of(
        st.lists(st.integers(0, MAX_ROLLOUT_ID), min_size=1, max_size=20).map(Rollouts),
        st.builds(
            lambda first, count, every: Rollouts(first=first, count=count, every=every),
            st.integers(0, 10**6),
            st.none() | st.integers(1, 50),
            st.integers(1, 20),
        ),
    ),
    st.integers(0, 10**6 + 2000),
)
def test_the_text_form_is_the_selection(rollouts: Rollouts, rollout_id: int) -> None:
    again = Rollouts.parse(str(rollouts))
    assert again == rollouts
    assert again.chosen(rollout_id) == rollouts.chosen(rollout_id)
    if rollouts.ids is None:  # the rule, written out once more
        k, r = divmod(rollout_id - rollouts.first, rollouts.every)
        assert rollouts.chosen(rollout_id) == (
            rollout_id >= rollouts.first and r == 0 and (rollouts.count is None or k < rollouts.count)
        )


# -- the profiler on toyserve --------------------------------------------------------------------


def _traces(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.trace.json"))


def _slug(url: str) -> str:
    return url.removeprefix("http://").replace(":", "_")


def _rollouts(
    profiler: profwin.RolloutProfiler, engines: list[Any], ids: range, run: Callable[[int], None] | None = None
) -> None:
    for rollout_id in ids:
        with profiler.rollout(rollout_id):
            for engine in engines:
                engine.generate(6)
            if run is not None:
                run(rollout_id)


def test_chosen_rollouts_are_profiled_on_every_engine_and_the_others_not(toy_site: Path, toy_engines) -> None:  # type: ignore[no-untyped-def]
    a, b = engines = toy_engines(2)
    spec = profwin.ProfileSpec(window=profwin.Window(1, 3), output_dir=a.trace_dir)
    profiler = profwin.RolloutProfiler("toy", spec, "1,3", engines=[a.url, b.url])
    _rollouts(profiler, engines, range(5))
    assert profiler.skipped == 3
    assert [(r.rollout, r.kind, r.ok, r.error, r.overlapped) for r in profiler.records] == [
        (1, "rollout", True, "", ()),
        (3, "rollout", True, "", ()),
    ]
    assert profiler.records[0].message == "rollout 1: profiling stopped on 2 of 2 engine(s), 2 trace(s) collected"
    expected = sorted(f"profwin-rollout{r}-{_slug(e.url)}-{n}.trace.json" for r, n in ((1, 1), (3, 2)) for e in engines)
    assert _traces(a.trace_dir) == expected  # named by rollout and engine; nothing for 0, 2, 4
    for record in profiler.records:
        assert sorted(x.path.name for x in record.artifacts) == [n for n in expected if f"rollout{record.rollout}-" in n]
        assert [x.steps for x in record.artifacts] == [profwin.Window(1, 3)] * 2
    assert json.loads(json.dumps(profiler.records[0].to_dict()))["artifacts"][0]["steps"] == "1:3"


def test_a_rollout_that_raises_or_is_interrupted_is_stopped_and_collected(toy_site: Path, toy_engines) -> None:  # type: ignore[no-untyped-def]
    a, b = engines = toy_engines(2)
    spec = profwin.ProfileSpec(window=profwin.Window(1, 3), output_dir=a.trace_dir)
    profiler = profwin.RolloutProfiler("toy", spec, "0+2", engines=[a.url, b.url])

    def fail(rollout_id: int) -> None:
        raise (RuntimeError("the reward model is down") if rollout_id == 0 else KeyboardInterrupt())

    for rollout_id, exc in ((0, RuntimeError), (1, KeyboardInterrupt)):
        with pytest.raises(exc):
            _rollouts(profiler, engines, range(rollout_id, rollout_id + 1), fail)
        assert (a.session, b.session) == (None, None)  # nothing left profiling
    first, second = profiler.records
    assert (first.ok, first.error) == (True, "RuntimeError: the reward model is down")  # ok: the profiling's outcome
    assert (
        first.message
        == "rollout 0 raised RuntimeError: the reward model is down; profiling stopped on 2 of 2 engine(s), 2 trace(s) collected"
    )
    assert (second.ok, second.error) == (True, "KeyboardInterrupt")
    for record in profiler.records:
        assert [x.steps for x in record.artifacts] == [profwin.Window(1, 3)] * 2
        assert all(r.ok for r in record.results)


def test_an_engine_that_cannot_start_leaves_the_rollout_running_unprofiled(toy_site: Path, toy_engines) -> None:  # type: ignore[no-untyped-def]
    import socket

    (a,) = toy_toy = toy_engines(1)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    spec = profwin.ProfileSpec(window=profwin.Window(1, 3), output_dir=a.trace_dir)
    profiler = profwin.RolloutProfiler("toy", spec, [2], engines=[a.url, dead])
    ran: list[int] = []
    with pytest.warns(
        profwin.WindowWarning,
        match=r"^profwin: rollout 2: not profiled: 1 of 2 engine\(s\) could not start \(http://127.0.0.1:\d+: GET .*/version failed: cannot reach the server.*\), so none profiles$",
    ):
        _rollouts(profiler, toy_toy, range(2, 3), ran.append)
    assert ran == [2]
    (record,) = profiler.records
    assert not record.ok
    assert record.artifacts == ()
    by_target = {r.target: r for r in record.results}
    assert "cannot reach the server" in by_target[dead].message
    assert by_target[a.url].details["rolled_back"] is True
    assert a.session is None  # the engine that started was stopped again


def test_a_rollout_running_during_a_profiled_one_is_named(toy_site: Path, toy_engines) -> None:  # type: ignore[no-untyped-def]
    (a,) = toy_engines(1)
    spec = profwin.ProfileSpec(window=profwin.Window(0, 2), output_dir=a.trace_dir)
    profiler = profwin.RolloutProfiler("toy", spec, "1", engines=a.url)

    def nested() -> None:
        with profiler.rollout(1):
            a.generate(1)
            with profiler.rollout(2):  # not chosen, but its steps land in rollout 1's window
                a.generate(1)

    with pytest.warns(profwin.WindowWarning, match=r"rollout 2 ran during its session: their engine steps may be in its window"):
        nested()
    (record,) = profiler.records
    assert (record.ok, record.overlapped) == (False, ("rollout 2",))
    with profiler.rollout(0), warnings.catch_warnings(), profiler.rollout(1):  # one already running
        warnings.simplefilter("ignore")
        a.generate(2)
    assert profiler.records[-1].overlapped == ("rollout 0",)


def test_async_with_and_engine_targets_asked_at_each_rollout(toy_site: Path, toy_engines) -> None:  # type: ignore[no-untyped-def]
    a, b = toy_engines(2)
    spec = profwin.ProfileSpec(window=profwin.Window(1, 3), output_dir=a.trace_dir)
    toy = profwin.backend("toy")
    current = [a]
    # EngineTargets given as they are (how a plugin reaches an engine its own way), asked anew each time.
    profiler = profwin.RolloutProfiler(
        "toy", spec, "%2", engines=lambda: [toy.target(e.url, api_key=None, timeout=5) for e in current]
    )

    async def run() -> None:
        for rollout_id in range(4):
            current[:] = [a] if rollout_id < 2 else [a, b]
            async with profiler.rollout(rollout_id, kind="eval"):
                for engine in (a, b):
                    await asyncio.to_thread(engine.generate, 4)

    asyncio.run(run())
    assert [(r.rollout, r.kind, r.ok) for r in profiler.records] == [(0, "eval", True), (2, "eval", True)]
    assert [sorted(x.path.name for x in r.artifacts) for r in profiler.records] == [
        [f"profwin-eval0-{_slug(a.url)}-1.trace.json"],
        sorted(f"profwin-eval2-{_slug(e.url)}-{n}.trace.json" for e, n in ((a, 2), (b, 1))),
    ]


class _Elsewhere:
    """A target whose engine writes on another machine (as one in a Ray actor on another node):
    ``plan.output_dir`` names its folder *there* (here it is under a regular file, so it can be
    neither created nor listed in this process), and the target lists and collects where the
    engine runs (``there``: the toyserve engine's own trace folder), bringing the files back to the
    session's ``output_dir``. What is checked is core's side: it lists through the target."""

    def __init__(self, inner: Any, there: Path, unreachable: Path) -> None:
        self.inner, self.there, self.unreachable = inner, there, unreachable
        self.name = f"elsewhere:{inner.name}"
        self.listed = 0

    def plan(self, spec: profwin.ProfileSpec, version: str | None, ctx: Any) -> profwin.EnginePlan:
        plan = self.inner.plan(spec.replace(output_dir=self.there), version, ctx)
        self.home = spec.output_dir
        return plan.replace(output_dir=self.unreachable)

    def listing(self, plan: profwin.EnginePlan) -> dict[str, tuple[int, int]]:
        self.listed += 1
        return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in self.there.iterdir() if p.is_file()}

    def start(self, plan: profwin.EnginePlan, ctx: Any) -> None:
        self.inner.start(plan, ctx)

    def stop(self, plan: profwin.EnginePlan, ctx: Any) -> bool:
        return bool(self.inner.stop(plan, ctx))

    def collect(self, plan: profwin.EnginePlan, files: Any, *, stopped: bool) -> tuple[list[Any], list[str]]:
        paths = files()
        assert all(p.parent == self.unreachable for p in paths)  # paths where the engine runs
        names = [p.name for p in paths]
        artifacts, notes = self.inner.collect(plan, lambda: [self.there / n for n in names], stopped=stopped)
        self.home.mkdir(parents=True, exist_ok=True)
        moved = []
        for artifact in artifacts:
            copy = self.home / artifact.path.name
            copy.write_bytes(artifact.path.read_bytes())
            moved.append(artifact.__class__(**{**artifact.to_dict(), "path": copy, "steps": artifact.steps}))
        return moved, notes


def test_a_target_whose_engine_writes_elsewhere_lists_its_own_files(toy_site: Path, toy_engines) -> None:  # type: ignore[no-untyped-def]
    (a,) = toy_engines(1)
    blocker = toy_site / "a-file"
    blocker.write_text("")
    home = toy_site / "home"
    spec = profwin.ProfileSpec(window=profwin.Window(1, 3), output_dir=home)
    target = _Elsewhere(profwin.backend("toy").target(a.url, api_key=None, timeout=5), a.trace_dir, blocker / "traces")
    (a.trace_dir / "older.trace.json").write_text("{}")  # there before the start: not this session's
    profiler = profwin.RolloutProfiler("toy", spec, "1", engines=[target])
    _rollouts(profiler, [a], range(2))
    (record,) = profiler.records
    assert record.ok, record.message
    (artifact,) = record.artifacts
    assert artifact.path.parent == home
    assert (artifact.path.name, artifact.steps) == (f"profwin-rollout1-{_slug(a.url)}-1.trace.json", profwin.Window(1, 3))
    assert record.results[0].details["written_bytes"] == (a.trace_dir / artifact.path.name).stat().st_size
    assert target.listed == 3  # before the start, and twice at the stop (what was written, what is new)
    assert sorted(p.name for p in home.iterdir()) == [artifact.path.name, f"{artifact.path.name}.profwin.json"]


def test_router_mode_asks_at_each_rollout_and_reports_a_worker_that_left(  # type: ignore[no-untyped-def]
    toy_site: Path, toy_engines, stub_server
) -> None:
    a, b = toy_engines(2)
    listed = [a.url, b.url]
    router = stub_server(lambda req: (200, {"workers": [{"url": u, "worker_type": "regular"} for u in listed]}))
    spec = profwin.ProfileSpec(window=profwin.Window(1, 3), output_dir=a.trace_dir)
    profiler = profwin.RolloutProfiler("toy", spec, "1", router=router.url)
    with profiler.rollout(0):
        pass
    assert router.seen == []  # a rollout not chosen asks nothing

    def rollout_1() -> None:
        with profiler.rollout(1):
            a.generate(4)
            b.generate(4)
            listed[:] = [a.url, "http://127.0.0.1:9"]  # b left the router, another worker joined

    with pytest.warns(profwin.WindowWarning, match="joined the router after the rollout's start"):
        rollout_1()
    (record,) = profiler.records
    by_target = {r.target: r for r in record.results}
    assert (by_target[a.url].ok, by_target[a.url].details["router"]) == (True, "listed")
    left = by_target[b.url]
    assert (left.ok, left.details["router"]) == (True, "left")
    assert left.message.endswith("left the router after the rollout's start; stopped at its URL")
    assert [x.steps for x in left.artifacts] == [profwin.Window(1, 3)]  # what it recorded is collected
    assert (by_target["http://127.0.0.1:9"].ok, by_target["http://127.0.0.1:9"].details["router"]) == (False, "joined")
    assert not record.ok
    assert b.session is None
    assert [r.path for r in router.seen] == ["/workers", "/workers"]


def test_file_prefixes_stay_within_128_characters(toy_site: Path, toy_engines) -> None:  # type: ignore[no-untyped-def]
    (a,) = toy_engines(1)
    spec = profwin.ProfileSpec(window=profwin.Window(0, 1), output_dir=a.trace_dir, prefix="p" * 128)
    profiler = profwin.RolloutProfiler("toy", spec, [123456789], engines=a.url)
    with profiler.rollout(123456789):
        a.generate(1)
    (name,) = _traces(a.trace_dir)
    prefix = name.removesuffix("-1.trace.json")
    assert len(prefix) == 128
    assert prefix.endswith(f"-rollout123456789-{_slug(a.url)}")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "engines: give the engines or a router's URL (exactly one of them)"),
        ({"engines": ["http://a:1"], "router": "http://r:1"}, "engines: give the engines or a router's URL"),
        ({"router": 5}, "router: must be str | None (got 5)"),  # a wrong type: an ArgumentTypeError
        ({"engines": "http://a:1", "timeout": 0}, "timeout: must be a number of seconds greater than 0"),
        ({"engines": "http://a:1", "on_active": "later"}, "on_active: must be 'error' or 'restart' (got 'later')"),
    ],
)
def test_bad_arguments_fail_at_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises((profwin.ConfigError, ArgumentTypeError)) as failed:
        profwin.RolloutProfiler("toy", "1:3", "1", **kwargs)
    assert isinstance(failed.value, ArgumentTypeError) == ("router" in kwargs and not isinstance(kwargs["router"], str))
    assert str(failed.value).startswith(message)
    with pytest.raises(profwin.ConfigError, match=r"^kind: must be 1-16 lower-case letters \(got 'Eval'\)"):
        profwin.RolloutProfiler("toy", "1:3", "1", engines="http://a:1").rollout(1, kind="Eval")


_NOTHING_FOR_THE_OTHERS = """
import json, sys
import profwin
profiler = profwin.RolloutProfiler("sglang", "2:6", "5000", router=sys.argv[1])
for rollout_id in range(1000):
    with profiler.rollout(rollout_id):
        pass
heavy = ("http.client", "ssl", "socket", "asyncio", "profwin.runtime.http", "profwin.runtime.remote", "profwin.runtime.router", "profwin.discovery")
print(json.dumps({"skipped": profiler.skipped, "records": len(profiler.records), "imported": [m for m in heavy if m in sys.modules]}))
"""


def test_rollouts_not_chosen_import_nothing_and_ask_nothing(stub_server) -> None:  # type: ignore[no-untyped-def]
    router = stub_server(lambda req: (200, {"workers": []}))
    done = subprocess.run(
        [sys.executable, "-c", _NOTHING_FOR_THE_OTHERS, router.url], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout) == {"skipped": 1000, "records": 0, "imported": []}
    assert router.seen == []


@pytest.mark.parametrize(
    "router", ["ftp://router:30000", "http://admin:secret@router:30000", "not a url", "http://r:1/?t=1", "", "http://"]
)
def test_a_router_is_checked_as_every_server_url_is(router: str) -> None:
    """RolloutProfiler kept any text as a router (a trainer's ``router=`` reached it unchecked);
    it goes through core's URL check, located at ``router``, before any rollout."""
    with pytest.raises(profwin.ConfigError) as caught:
        profwin.RolloutProfiler("sglang", "2:6", "1", router=router)
    assert caught.value.path == "router"
    assert "secret" not in str(caught.value)
    assert profwin.RolloutProfiler("sglang", "2:6", "1", router="router:30000/").router == "http://router:30000"
