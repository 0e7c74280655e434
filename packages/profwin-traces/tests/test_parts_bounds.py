"""A window's parts read within bounds (issue 41, class 2): the numbers a part or a step carries
never size the work or the message, each file's facts are read once, a sidecar profwin did not
write as a regular file is refused at once, a part that cannot be read says what is wrong with it,
and ``join_parts`` from Python stays in profwin's error family.

The bounded cases run ``profwin summarize`` in a child process under an address-space limit and a
timeout, as the catalogue that found them did."""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from profwin.errors import ProfwinError
from profwin_traces import TraceError, TraceFacts, join_parts, trace_facts

AS_LIMIT = 1 << 30
"""The address space a child may use: 1 GiB (it needs about 60 MB)."""


def write_part(
    folder: Path, part: int, steps: list[int], *, session: str = "S1", gz: bool = False, sidecar: bool = False
) -> Path:
    """A part trace of window 0:30 on rank 0 holding ``steps``, its provenance inside it or in a sidecar."""
    events = []
    for s in steps:
        t = 1000.0 * (len(events) + 1)
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1, "ts": t, "dur": 100.0}
        )
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 10, "dur": 50.0})
    origin = {"session": session, "window": "0:30", "part": part, "rank": 0}
    doc: dict[str, Any] = {"schemaVersion": 1}
    if not sidecar:
        doc["profwin"] = origin
    doc["traceEvents"] = events
    name = f"t_rank0_w0-30_part{part:04d}_s{steps[0]}-{steps[-1] + 1}.pt.trace.json" + (".gz" if gz else "")
    path = folder / name
    text = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(text) if gz else text)
    if sidecar:
        Path(f"{path}.profwin.json").write_text(json.dumps(origin))
    return path


def summarize_in_child(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """``profwin summarize ARGS`` in a child under :data:`AS_LIMIT`: its result, wall seconds and peak RSS in KiB."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "profwin", "summarize", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
        check=False,
    )
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return done, time.monotonic() - began, rss if rss > before else -1


@pytest.mark.parametrize(
    ("far", "missing"), [(10**18, "999,999,999,999,999,998 part(s) missing"), (3_000_000, "2,999,998 part(s) missing")]
)
def test_parts_numbered_far_apart_cost_two_numbers(tmp_path: Path, far: int, missing: str) -> None:
    """Parts 1 and 10**18 were 1.2 GB and a MemoryError (20 GB without a limit); parts 1 and
    3,000,000 a message of 20,000,000 characters listing every missing number."""
    write_part(tmp_path, 1, [0, 1])
    write_part(tmp_path, far, [2, 3])
    done, seconds, _ = summarize_in_child(str(tmp_path))
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr[:2000]
    assert len(done.stderr) < 600
    assert missing in done.stderr
    assert "internal error" not in done.stderr
    assert f"(2..{far - 1})" in done.stderr
    assert seconds < 30


def test_steps_numbered_far_apart_cost_two_numbers(tmp_path: Path) -> None:
    """The same for the step numbers a window's parts hold (18 digits are allowed)."""
    write_part(tmp_path, 1, [0, 1])
    write_part(tmp_path, 2, [10**17, 10**17 + 1])
    done, _, _ = summarize_in_child(str(tmp_path))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "hold steps 0..100000000000000001 but not 2..99999999999999999 (99,999,999,999,999,998 step(s))" in done.stderr
    assert len(done.stderr) < 600


def test_many_gaps_are_named_in_bounded_text(tmp_path: Path) -> None:
    facts = [TraceFacts(path=f"p{n}", rank=0, session="S", mtime_ns=0, window="0:9", part=n) for n in range(1, 200_001, 2)]
    with pytest.raises(TraceError) as raised:
        join_parts(facts)
    text = str(raised.value)
    assert "99,999 part(s) missing" in text
    assert "(2, 4, 6, 8, 10, … (99,994 more runs))" in text
    assert len(text) < 400


class Raising:
    path = "x.json"
    rank = 0
    session = "S"
    window = "0:2"

    @property
    def part(self) -> int:
        raise KeyError("boom")


@pytest.mark.parametrize(
    ("given", "where"),
    [
        (["not facts"], "facts[0]"),
        ([object()], "facts[0]"),
        ([Raising()], "facts[0].part"),
        ([TraceFacts(path="a", rank=0, session="S", mtime_ns=0, window="0:2", part=1), 7], "facts[1]"),
        ([TraceFacts(path="a", rank=True, session="S", mtime_ns=0, window="0:2", part=1)], "facts[0].rank"),  # type: ignore[arg-type]
        ([TraceFacts(path="a", rank=0, session=b"S", mtime_ns=0, window="0:2", part=1)], "facts[0].session"),  # type: ignore[arg-type]
        ([TraceFacts(path="a", rank=0, session="S", mtime_ns=0, window="0:2", part=-3)], "facts[0].part"),
        ([TraceFacts(path="a", rank=0, session="S", mtime_ns=0, window="0:2", part=1.5)], "facts[0].part"),  # type: ignore[arg-type]
    ],
)
def test_join_parts_from_python_stays_in_the_family(given: list[Any], where: str) -> None:
    with pytest.raises(ProfwinError) as raised:  # a ConfigError, or an ArgumentTypeError for plain data given as facts
        join_parts(given)
    assert raised.value.path == where
    assert "\n" not in str(raised.value)
    assert len(str(raised.value)) < 300


def test_fifo_sidecars_fail_at_once(tmp_path: Path) -> None:
    """Three part sidecars that are FIFOs with no writer held ``profwin summarize`` 3 x 3 x 30 s;
    profwin writes its sidecars as regular files, so a FIFO there is refused without a wait."""
    for k in (1, 2, 3):
        trace = write_part(tmp_path, k, [2 * k, 2 * k + 1], sidecar=True)
        sidecar = Path(f"{trace}.profwin.json")
        sidecar.unlink()
        os.mkfifo(sidecar)
    done, seconds, _ = summarize_in_child(str(tmp_path), timeout=25)
    assert done.returncode == 2
    assert "t_rank0_w0-30_part0001_s2-4.pt.trace.json: its provenance sidecar is damaged or not profwin's" in done.stderr
    assert "it is a FIFO" in done.stderr
    assert seconds < 20


def test_each_file_is_read_once_per_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``profwin summarize FOLDER`` asks for a trace's facts three times (one trace or many, the
    session, the parts) and its provenance once more: each sidecar and each header is read once."""
    import profwin_traces.provenance
    import profwin_traces.ranks
    from profwin.cli import main

    paths = [write_part(tmp_path, k, [2 * k, 2 * k + 1], sidecar=True) for k in (1, 2, 3)]
    reads: dict[str, int] = {}

    def counting(read: Any) -> Any:
        def counted(path: Any, *args: Any, **kwargs: Any) -> Any:
            reads[str(path)] = reads.get(str(path), 0) + 1
            return read(path, *args, **kwargs)

        return counted

    monkeypatch.setattr(profwin_traces.provenance, "read_input", counting(profwin_traces.provenance.read_input))
    monkeypatch.setattr(profwin_traces.ranks, "read_trace", counting(profwin_traces.ranks.read_trace))
    assert main(["summarize", str(tmp_path), "--json"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["trace"]["parts"] == [str(p) for p in paths]
    assert reads == {**{str(p): 1 for p in paths}, **{f"{p}.profwin.json": 1 for p in paths}}
    # A changed file is read again.
    Path(f"{paths[0]}.profwin.json").write_text(json.dumps({"session": "S2", "window": "0:30", "part": 1, "rank": 0}))
    assert trace_facts(paths[0]).session == "S2"


def damage(kind: str, path: Path) -> None:
    data = path.read_bytes()
    if kind == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif kind == "cut gzip":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "lying gzip size":
        path.write_bytes(data[:-4] + (10**9).to_bytes(4, "little"))
    elif kind == "not a trace":
        path.write_bytes(b"\x1f\x8b" + os.urandom(200))


@pytest.mark.parametrize("kind", ["fifo", "cut gzip", "lying gzip size", "not a trace"])
def test_a_part_that_cannot_be_read_says_what_is_wrong(tmp_path: Path, kind: str) -> None:
    """Among parts that can be read, one that cannot was reported as "missing"."""
    write_part(tmp_path, 1, [0, 1], gz=True)
    bad = write_part(tmp_path, 2, [2, 3], gz=True)
    write_part(tmp_path, 3, [4, 5], gz=True)
    damage(kind, bad)
    done, _, _ = summarize_in_child(str(tmp_path), timeout=25)
    assert done.returncode == 2
    assert done.stderr.startswith(f"profwin: error: {bad}: "), done.stderr
    assert "missing" not in done.stderr
