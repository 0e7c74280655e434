"""The session timeline: core's recorder (rows, parts, atomic files, the format version), the
in-process Session's timeline beside its trace, and ``profwin timeline`` / ``profwin merge
--timeline`` on what they wrote (:func:`simulate` feeds the recorder a rollout whose every number is
known; the engines' own are checked against their records in integration_tests/{vllm,sglang}/test_timeline.py)."""

from __future__ import annotations

import gzip
import itertools
import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin.cli import main
from profwin.errors import ConfigError
from profwin.runtime.timeline_record import (
    FLAG,
    PART_STEPS,
    TimelineRecorder,
    decode_timeline,
    encode_timeline,
    timeline_artifacts,
)
from profwin_traces import TraceError, merge, read_timelines, timeline_report

# -- a rollout, simulated: what an engine plugin feeds the recorder, every number known -------------


def simulate(
    folder: Path,
    *,
    lengths: list[int],
    slots: int,
    prompt: int = 16,
    rank: int = 0,
    prefix: str = "sim",
    part_steps: int = 50_000,
    window: tuple[int, int] | None = None,
    session: str | None = "20261203T000000Z-abcdef",
) -> TimelineRecorder:
    """Requests of ``lengths`` output tokens (in that order), at most ``slots`` at once; each
    step's time is not slept: the recorder's clock runs as fast as the loop."""
    recorder = TimelineRecorder(folder, prefix=prefix, rank=rank, engine="sim", session=session, part_steps=part_steps)
    waiting = list(range(len(lengths)))
    running: dict[int, int] = {}  # request -> tokens produced
    while waiting or running:
        admitted = []
        while waiting and len(running) < slots:
            r = waiting.pop(0)
            running[r] = -1  # prefills this step
            admitted.append(f"r{r}")
        pairs = [(f"r{r}", made + 1) for r, made in running.items()]
        prefilling = sum(1 for made in running.values() if made < 0)
        recorder.begin(
            batch=len(running), prefilling=prefilling, prefill_tokens=prefilling * prompt, produced=pairs, admitted=admitted,
            running=len(running), waiting=len(waiting),
        )  # fmt: skip
        recorder.end()
        for r in list(running):
            running[r] += 1
            if running[r] + 1 >= lengths[r]:
                del running[r]
                recorder.finish(f"r{r}", "length")
    if window is not None:
        recorder.set_window(profwin.Window(*window))
    recorder.close()
    return recorder


def long_tail(n: int = 64, seed: int = 0) -> list[int]:
    """Output lengths with a long tail: most requests short, a few very long."""
    rng = random.Random(seed)
    return [rng.randint(40, 80) if rng.random() < 0.9 else rng.randint(300, 400) for _ in range(n)]


def _rows(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


# -- the flag ---------------------------------------------------------------------------------


def test_the_flag_travels_on_every_start_value_and_comes_off_whole() -> None:
    from profwin.runtime.tokens import TOKEN_BASE

    for start in (None, 0, 1, 20, TOKEN_BASE + 20, (1 << 40) + 3):
        sent = encode_timeline(start)
        assert FLAG <= sent < 2 * FLAG
        assert decode_timeline(sent) == (start or 0, True)
    for plain in (None, 0, 5, TOKEN_BASE, 1 << 62, "3", True):
        assert decode_timeline(plain) == (plain, False)
    with pytest.raises(ConfigError, match="start"):
        encode_timeline(FLAG)


# -- the recorder -------------------------------------------------------------------------------


def test_a_rollouts_rows_are_what_the_engine_fed(tmp_path: Path) -> None:
    lengths = [3, 5, 2, 4]
    recorder = simulate(tmp_path, lengths=lengths, slots=2, prompt=10)
    (path,) = recorder.written
    data = _rows(path)
    assert (data["format"], data["version"], data["part"], data["steps"]) == ("profwin.timeline", 1, None, f"0:{recorder.steps}")
    rows = [dict(zip(data["step_fields"], r, strict=True)) for r in data["step_rows"]]
    # Two slots: requests 0 and 1 first; 2 when 1 is done? No: 0 (3 tokens) ends first, at step 2.
    assert [(r["batch"], r["prefilling"], r["prefill_tokens"], r["decoding"], r["produced"]) for r in rows[:3]] == [
        (2, 2, 20, 0, 2),
        (2, 0, 0, 2, 2),
        (2, 0, 0, 2, 2),
    ]
    assert [(r["token_median"], r["token_min"], r["token_max"]) for r in rows[:3]] == [(0, 0, 0), (1, 1, 1), (2, 2, 2)]
    assert [r["step"] for r in rows] == list(range(len(rows)))
    assert all(r["dur_us"] >= 0 and r["start_us"] >= 0 for r in rows)
    requests = {r[0]: dict(zip(data["request_fields"], r, strict=True)) for r in data["request_rows"]}
    assert {rid: (r["output"], r["finish"]) for rid, r in requests.items()} == {
        f"r{i}": (n, "length") for i, n in enumerate(lengths)
    }
    assert requests["r0"]["admitted"] == requests["r0"]["first_token"] == 0
    assert requests["r0"]["last_token"] == 2
    assert requests["r2"]["admitted"] == 3  # waited for a slot
    assert sum(r["produced"] for r in rows) == sum(lengths)


def test_a_long_session_is_written_in_parts_and_read_back_as_one(tmp_path: Path) -> None:
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    whole.mkdir()
    parts.mkdir()
    lengths = long_tail(40, seed=3)
    one = simulate(whole, lengths=lengths, slots=8, prefix="run")
    many = simulate(parts, lengths=lengths, slots=8, prefix="run", part_steps=50)
    assert len(one.written) == 1
    assert len(many.written) == math.ceil(many.steps / 50) > 3
    # Bounded: no part holds more than part_steps rows; each says its steps and number.
    for k, path in enumerate(many.written, start=1):
        data = _rows(path)
        assert data["part"] == k
        assert len(data["step_rows"]) <= 50
        assert f"_part{k:04d}_s" in path.name
    ((a,), _), ((b,), _) = read_timelines([whole]), read_timelines([parts])
    assert len(b.paths) == len(many.written)
    strip = [tuple(v for i, v in enumerate(r) if i not in (2, 3)) for r in a.steps]  # times differ run to run
    assert [tuple(v for i, v in enumerate(r) if i not in (2, 3)) for r in b.steps] == strip
    assert sorted(b.requests) == sorted(a.requests)
    # The analysis does not care how the session was cut.
    x, y = timeline_report([whole]).ranks[0], timeline_report([parts]).ranks[0]
    assert (x.phases[1].steps, x.tail_steps, x.finished_step, x.suggested_steps) == (
        y.phases[1].steps,
        y.tail_steps,
        y.finished_step,
        y.suggested_steps,
    )
    # The artifacts name each part's steps.
    found = timeline_artifacts(many.written, prefix="run", producer="sim")
    assert [str(f.steps) for f in found][:2] == ["0:50", "50:100"]
    assert PART_STEPS == 50_000


def test_requests_still_running_at_the_stop_are_written_as_they_stand(tmp_path: Path) -> None:
    recorder = TimelineRecorder(tmp_path, prefix="p", rank=1, engine="sim")
    recorder.begin(batch=2, prefilling=2, prefill_tokens=8, produced=[("a", 0), ("b", 0)], admitted=["a", "b"])
    recorder.limit("a", 2)
    recorder.end()
    recorder.begin(batch=2, prefilling=0, prefill_tokens=0, produced=[("a", 1), ("b", 1)])
    recorder.end()
    (path,) = recorder.close()
    assert recorder.close() == [path]  # idempotent
    requests = {r[0]: r for r in _rows(path)["request_rows"]}
    assert requests["a"][5] == "length"  # reached its limit (vLLM's max_tokens)
    assert requests["b"][5] is None  # still running: no finish said
    assert path.name.startswith("p_rank1_")


def test_a_newer_format_is_refused_saying_which_it_needs(tmp_path: Path) -> None:
    (path,) = simulate(tmp_path, lengths=[2, 3], slots=2).written
    data = _rows(path)
    data["version"] = 2
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError, match="timeline format version 2, and this profwin-core reads version 1 at most"):
        read_timelines([path])
    path.write_text(json.dumps({"traceEvents": []}))
    with pytest.raises(TraceError, match="not a profwin timeline"):
        read_timelines([path])


# -- the in-process session -----------------------------------------------------------------------


@pytest.mark.torch
def test_a_sessions_timeline_times_every_step_and_shares_the_traces_session(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import torch

    spec = profwin.ProfileSpec(window=profwin.Window(3, 6), output_dir=tmp_path, activities=("cpu",), timeline=True)
    x = torch.randn(16, 16)
    with profwin.Session(spec) as session:
        for _ in range(9):
            x = torch.tanh(x @ x)
            session.step()
    (trace,) = [a for a in session.artifacts if a.kind == "trace"]
    (timeline,) = [a for a in session.artifacts if a.kind == "timeline"]
    assert timeline.steps == profwin.Window(0, 9)
    data = _rows(timeline.path)
    assert data["engine"] == "torch"
    assert data["window"] == "3:6"
    assert data["window_steps"] == "3:6"
    with gzip.open(trace.path, "rt") as f:
        assert json.load(f)["profwin"]["session"] == data["session"]
    rows = [dict(zip(data["step_fields"], r, strict=True)) for r in data["step_rows"]]
    assert [r["step"] for r in rows] == list(range(9))
    assert all(a["start_us"] + a["dur_us"] == b["start_us"] for a, b in itertools.pairwise(rows))
    assert all(r["batch"] is None for r in rows)  # a loop's steps: their times only


def test_without_the_option_a_session_writes_no_timeline(tmp_path: Path) -> None:
    spec = profwin.ProfileSpec(window=profwin.Window(1, 2), output_dir=tmp_path)
    with profwin.Session(spec, profiler=_NullProfiler()) as session:
        for _ in range(3):
            session.step()
    assert not list(tmp_path.glob("*.timeline.json"))
    spec = spec.replace(timeline=True)
    with profwin.Session(spec, profiler=_NullProfiler()) as session:
        for _ in range(3):
            session.step()
    (found,) = list(tmp_path.glob("*.timeline.json"))
    assert len(_rows(found)["step_rows"]) == 3


class _NullDriver:
    def advance(self, step: int) -> None:
        pass

    def close(self, steps: Any, *, failed: bool) -> list[Any]:
        return []


class _NullProfiler:
    name = "null"
    lead_steps = 0

    def check(self, spec: Any) -> Any:
        return spec

    def open(self, spec: Any, *, window: Any, first_step: int, rank: int) -> _NullDriver:
        return _NullDriver()


def test_the_spec_says_timeline_in_record() -> None:
    spec = profwin.spec_from_mapping({"window": "2:5", "record": ["timeline", "shapes"]})
    assert spec.timeline
    assert spec.shapes
    assert spec.records() == ("shapes", "timeline")
    with pytest.raises(ConfigError, match=r"record\[0\].*timelines"):
        profwin.spec_from_mapping({"record": ["timelines"]})


# -- profwin timeline -----------------------------------------------------------------------------


def test_phases_tail_and_finishing_times_of_a_long_tail(tmp_path: Path) -> None:
    lengths = long_tail(64, seed=0)
    simulate(tmp_path, lengths=lengths, slots=16, window=(100, 130))
    (rank,) = timeline_report([tmp_path], length=20).ranks
    (timeline,), _ = read_timelines([tmp_path])
    batches = [r[4] for r in timeline.steps]
    peak = max(batches)
    assert rank.peak_batch == peak == 16
    ramp, steady, tail = rank.phases
    assert [p.name for p in rank.phases] == ["ramp", "steady", "tail"]
    # Contiguous, the whole session, each by its rule.
    spans = [tuple(int(v) for v in p.steps.split(":")) if p.steps else (0, 0) for p in rank.phases]
    assert spans[1][0] == next(i for i, b in enumerate(batches) if b >= 0.9 * peak)
    assert spans[2] == (max(i for i, b in enumerate(batches) if b > 0.25 * peak) + 1, len(batches))
    assert all(b <= 0.25 * peak for b in batches[spans[2][0] :])
    assert rank.tail_steps == spans[2][1] - spans[2][0] > 10  # the few long responses
    assert math.isclose(sum(p.time_share for p in rank.phases), 1.0, abs_tol=2e-4)
    assert sum(p.tokens for p in rank.phases) == rank.tokens == sum(lengths)
    assert ramp.step_count + steady.step_count + tail.step_count == rank.steps
    # Time to 50/90/100% finished: the requests' last tokens, in order.
    last = sorted(r[3] for r in timeline.requests)
    assert rank.finished_step == {"50%": last[31], "90%": last[57], "100%": last[63]}
    assert rank.finished_step["100%"] == rank.steps - 1
    # The window: where it sits; the suggestion: 20 steps in the middle of steady decode.
    assert rank.window_steps == "100:130"
    assert rank.window_place.startswith("steps 100:130 (30 in steady)")
    a, b = (int(v) for v in rank.suggested_steps.split(":"))  # type: ignore[union-attr]
    assert b - a == 20
    assert spans[1][0] <= a
    assert b <= spans[1][1]
    medians = [r[9] for r in timeline.steps[a:b]]
    assert rank.suggested_steps_tokens == f"{min(medians)}:{max(medians) + 1}"
    # In tokens: the token the request furthest ahead makes at the first suggested step; a token
    # window from there opens at that step (this rollout admits as requests finish: the one
    # furthest ahead first reaches it there).
    ahead = timeline.steps[a][11]
    assert rank.suggested_tokens == f"{ahead}:{ahead + 20}"
    assert rank.suggested_tokens_open == min(s for s, r in enumerate(timeline.steps) if r[11] >= ahead)


def test_several_ranks_and_their_imbalance(tmp_path: Path) -> None:
    simulate(tmp_path, lengths=[50] * 16, slots=8, rank=0)
    simulate(tmp_path, lengths=[50] * 15 + [400], slots=8, rank=1)
    report = timeline_report([tmp_path])
    assert [r.label for r in report.ranks] == ["sim rank 0", "sim rank 1"]
    assert [r.tail_steps for r in report.ranks] == [0, 350]
    assert report.imbalance["tail_time_s"]["max_rank"] == "sim rank 1"
    assert report.imbalance["tokens"]["max_rank"] == "sim rank 1"


def test_of_several_sessions_the_newest_is_read_without_sessions_that_ran_before_it(tmp_path: Path) -> None:
    """Sessions on engines share one id across the engines: the newest is read alone, a rank it
    did not reach is not filled in from an earlier session (it did not run at the same time)."""
    simulate(tmp_path, lengths=[20] * 4, slots=4, rank=0, session="s1")
    simulate(tmp_path, lengths=[20] * 4, slots=4, rank=1, session="s1")
    simulate(tmp_path, lengths=[30] * 4, slots=4, rank=0, session="s2")
    timelines, notes = read_timelines([tmp_path])
    assert [(t.session, t.header["rank"]) for t in timelines] == [("s2", 0)]
    assert notes == ["2 sessions found; reading the newest, s2 (choose one with --session)"]
    timelines, notes = read_timelines([tmp_path], session="s1")
    assert [(t.session, t.header["rank"]) for t in timelines] == [("s1", 0), ("s1", 1)]
    assert notes == []


SPAWNED_JOB = """
import sys, torch, torch.distributed as dist, torch.multiprocessing as mp, profwin

def worker(rank, out):
    dist.init_process_group("gloo", init_method=f"file://{out}/store", rank=rank, world_size=2)
    spec = profwin.ProfileSpec(window=profwin.Window(2, 5), output_dir=out, ranks="all", timeline=True)
    tensor = torch.ones(64)
    with profwin.Session(spec) as session:
        for _ in range(8):
            dist.all_reduce(tensor)
            session.step()
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[1],), nprocs=2)
"""


@pytest.mark.torch
def test_the_ranks_of_one_job_are_read_together(tmp_path: Path) -> None:
    """A two-rank job (torch.multiprocessing.spawn, gloo) after an earlier one: each rank's
    in-process session has an id of its own; ``profwin timeline`` reads both ranks of the job,
    which ran at the same time, and reports their imbalance, leaving the earlier job out."""
    pytest.importorskip("torch")
    out = tmp_path / "out"
    out.mkdir()
    for rank in (0, 1):  # the earlier job: one session per rank, as the real one writes them
        simulate(out, lengths=[20] * 4, slots=4, rank=rank, prefix="profwin", session=f"earlier-{rank}")
    script = tmp_path / "job.py"
    script.write_text(SPAWNED_JOB)
    subprocess.run([sys.executable, str(script), str(out)], check=True, capture_output=True, timeout=300)
    headers = [json.loads(p.read_text()) for p in out.glob("*.timeline.json")]
    job = {h["session"]: h for h in headers if not h["session"].startswith("earlier-")}
    assert sorted(h["rank"] for h in job.values()) == [0, 1]
    done = subprocess.run(
        [sys.executable, "-m", "profwin", "timeline", str(out), "--json"], capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout)
    assert [(r["session"], r["rank"]) for r in report["ranks"]] == sorted(
        ((session, h["rank"]) for session, h in job.items()), key=lambda item: item[1]
    )
    assert {report["imbalance"]["time_s"]["max_rank"], report["imbalance"]["time_s"]["min_rank"]} == {
        "profwin rank 0",
        "profwin rank 1",
    }
    newest = max(job.values(), key=lambda h: h["started_unix_ns"])["session"]
    other = next(session for session in job if session != newest)
    assert report["notes"] == [
        f"4 sessions found; reading the newest, {newest}, and those of other ranks that ran at the same time ({other}) "
        "(choose one with --session)"
    ]


def test_the_command_in_text_json_and_a_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    simulate(tmp_path, lengths=long_tail(32, seed=1), slots=8, window=(20, 40))
    png = tmp_path / "timeline.png"
    done = subprocess.run(
        [sys.executable, "-m", "profwin", "timeline", str(tmp_path), "--plot", str(png), "--length", "10"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "  steady  steps " in done.stdout
    assert "tail: " in done.stdout
    assert "at <= 25% of the peak batch" in done.stdout
    assert "requests finished: 50% by " in done.stdout
    assert "window: steps 20:40" in done.stdout
    assert "suggested window: steps " in done.stdout
    assert done.stderr.strip() == f"plot: {png}"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    done = subprocess.run(
        [sys.executable, "-m", "profwin", "timeline", str(tmp_path), "--json"], capture_output=True, text=True, check=True
    )
    (rank,) = json.loads(done.stdout)["ranks"]
    assert [p["name"] for p in rank["phases"]] == ["ramp", "steady", "tail"]
    assert rank["window_steps"] == "20:40"


def test_the_commands_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["timeline", str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.strip().endswith("nothing: no such file or folder")
    (tmp_path / "x.timeline.json").write_text("{")
    assert main(["timeline", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "not a profwin timeline: invalid JSON" in err
    assert main(["timeline", str(tmp_path), "--plot", str(tmp_path / "a.txt")]) == 2
    assert "--plot must name an image file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("rank", [1], "rank is not an integer or null (got [1])"),
        ("rank", True, "rank is not an integer or null (got True)"),
        ("prefix", {"a": 1}, "prefix is not a string or null (got {'a': 1})"),
        ("started_unix_ns", "x", "started_unix_ns is not an integer or null (got 'x')"),
        ("part", 1.5, "part is not an integer or null (got 1.5)"),
        ("session", 7, "session is not a string or null (got 7)"),
    ],
)
def test_a_header_field_of_another_type_is_the_files_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: Any, said: str
) -> None:
    """Each field the reader relies on is checked where the file is read: a list there was an
    internal error (an unhashable key), a string among integers one too (a comparison)."""
    simulate(tmp_path, lengths=[10] * 2, slots=2, session="s1")
    simulate(tmp_path, lengths=[10] * 2, slots=2, rank=1, session="s2")
    path = next(tmp_path.glob("sim_rank0_*.timeline.json"))
    data = _rows(path)
    data[field] = value
    path.write_text(json.dumps(data))
    assert main(["timeline", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"profwin: error: {path}: a timeline whose {said}\n"


# -- one view: profwin merge --timeline ------------------------------------------------------------


@pytest.mark.torch
def test_merge_puts_the_timeline_beside_the_windows_trace_on_one_clock(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import torch

    spec = profwin.ProfileSpec(window=profwin.Window(4, 7), output_dir=tmp_path, activities=("cpu",), timeline=True)
    x = torch.randn(16, 16)
    with profwin.Session(spec) as session:
        for _ in range(12):
            x = torch.tanh(x @ x)
            session.step()
    out = tmp_path / "one-view.json"
    result = merge([tmp_path], out, timelines=[tmp_path])
    assert [t.producer for t in result.traces] == ["torch", "profwin.timeline"]
    events = json.loads(out.read_text())["traceEvents"]
    window = next(e for e in events if e.get("name") == "window 4:7 (steps 4:7)")
    steps = sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    # The window's slice starts where the trace's first step does (one clock), and covers its steps.
    assert window["ts"] == pytest.approx(steps[0]["ts"], abs=1.0)
    assert window["ts"] + window["dur"] >= steps[-1]["ts"]
    assert {e["pid"] for e in events if e.get("cat") == "profwin.timeline"} == {2}
