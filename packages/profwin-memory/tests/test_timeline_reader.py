"""The streaming timeline reader: valid files read back as json.load reads them, every malformed
value is an error naming its place, and the bounds hold (real files, msgspec and stdlib paths)."""

from __future__ import annotations

import gzip
import itertools
import json
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import profwin_memory.timeline as timeline_module
from profwin_memory import column_text
from profwin_memory.cli import main
from profwin_memory.timeline import TimelineError, load_timeline

Edit = Callable[[str], str]


def timeline(events: int = 20) -> dict[str, Any]:
    """A valid timeline as cpu_timeline.build_timeline writes it (steps 3:5, two ops)."""
    sizes = [64, -64] * (events // 2) + [64] * (events % 2)
    live = list(itertools.accumulate(sizes))
    return {
        "format": "profwin.memory-timeline",
        "version": 2,
        "device": "cpu",
        "steps": "3:5",
        "units": {"bytes": "bytes", "t_us": "microseconds from the start of the first step"},
        "totals": {
            "alloc_bytes": 64 * ((events + 1) // 2), "alloc_count": (events + 1) // 2, "free_bytes": 64 * (events // 2),
            "free_count": events // 2, "peak_live_bytes": 64, "peak_step": 3, "end_live_bytes": live[-1] if live else 0,
            "outside_steps": 0, "frees_of_older_blocks": 0,
        },
        "per_step": {"step": [3, 4], "alloc_bytes": [64, 0], "alloc_count": [1, 0], "free_bytes": [64, 0],
                     "free_count": [1, 0], "peak_live_bytes": [64, 64], "end_live_bytes": [0, 0]},
        "top_ops": [{"op": "aten::empty", "alloc_bytes": 64, "alloc_count": 1}],
        "ops": ["aten::empty", "aten::mm"],
        "events": {"t_us": [round(i * 0.7, 1) for i in range(events)], "step": [3 + 2 * i // max(events, 1) for i in range(events)],
                   "bytes": sizes, "live_bytes": live, "op": [i % 2 for i in range(events)]},
        "window": "3:5", "rank": 0, "pid": 4242, "torch": "2.13.0+cpu",
    }  # fmt: skip


@pytest.fixture(params=["numpy", "msgspec", "stdlib"])
def fast(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every way a column is read: counted from its text by numpy from the first byte (a column
    not in the plain form, or a value out of bounds, then decoded by msgspec), msgspec checking as
    it decodes (these files are under column_text.NUMPY_AFTER_CHARS), or the standard library and
    a check after."""
    monkeypatch.setenv("PROFWIN_TRACES_FAST", "0" if request.param == "stdlib" else "1")
    if request.param == "numpy":
        monkeypatch.setattr(column_text, "NUMPY_AFTER_CHARS", 0)
    timeline_module._typed_decoder.cache_clear()
    yield request.param
    timeline_module._typed_decoder.cache_clear()


def write(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode(), compresslevel=1) if path.name.endswith(".gz") else text.encode())
    return path


@pytest.mark.parametrize("name", ["t.memory_timeline.json", "t.memory_timeline.json.gz"])
@pytest.mark.parametrize("events", [0, 1, 20, 200_000])
def test_a_valid_timeline_reads_back_as_json_load_reads_it(tmp_path: Path, fast: str, name: str, events: int) -> None:
    """200,000 events are 5 MB: columns cross buffers and batches; kept whole, or counted."""
    data = timeline(events)
    path = write(tmp_path / name, json.dumps(data))
    assert load_timeline(path) == data
    counted = load_timeline(path, events=False)
    assert (counted["events"], counted["per_step"], counted["ops"]) == (events, 2, 2)
    assert counted["totals"] == data["totals"]


def test_any_key_order_and_whitespace_reads_the_same(tmp_path: Path, fast: str) -> None:
    """sort_keys puts events before ops and steps: their bounds are checked once read."""
    data = timeline(50)
    path = write(tmp_path / "t.memory_timeline.json", json.dumps(data, sort_keys=True, indent=3))
    assert load_timeline(path) == data
    data["events"]["op"][7] = 2
    write(path, json.dumps(data, sort_keys=True, indent=3))
    with pytest.raises(TimelineError, match=r"events\.op\[7\] is 2; it must be an index into ops, which holds 2 names"):
        load_timeline(path)


def edited(change: Callable[[Any, Any], None], path: str) -> Edit:
    """An edit of the timeline's JSON text: ``change(holder, key)`` at ``path`` (``events.t_us.7``)."""

    def edit(body: str) -> str:
        data = json.loads(body)
        *parents, last = path.split(".")
        holder: Any = data
        for part in parents:
            holder = holder[int(part)] if isinstance(holder, list) else holder[part]
        change(holder, int(last) if isinstance(holder, list) else last)
        return json.dumps(data, separators=(",", ":"))

    return edit


def put(path: str, value: Any) -> Edit:
    return edited(lambda holder, key: holder.__setitem__(key, value), path)


def drop(path: str) -> Edit:
    return edited(lambda holder, key: holder.pop(key), path)


def text(old: str, new: str) -> Edit:
    def edit(body: str) -> str:
        assert old in body
        return body.replace(old, new, 1)

    return edit


# (label, an edit of the valid timeline's dict or of its JSON text, what the error says)
MALFORMED: list[tuple[str, Edit, str]] = [
    ("string total", put("totals.alloc_bytes", "5"), 'totals.alloc_bytes is "5"; it must be an integer'),
    ("negative total", put("totals.peak_live_bytes", -1), "totals.peak_live_bytes is -1; it must be an integer >= 0"),
    ("missing total", drop("totals.free_count"), "totals.free_count is missing"),
    ("totals not an object", put("totals", 5), "totals is 5; it must be an object"),
    (
        "peak step outside steps",
        put("totals.peak_step", 9),
        "totals.peak_step is 9; it must be a step of the timeline's steps 3:5",
    ),
    ("string time", put("events.t_us.7", "1.5"), 'events.t_us[7] is "1.5"; it must be a number'),
    ("NaN time", text("4.9", "NaN"), "events.t_us[7] is NaN; it must be a finite number"),
    ("infinite time", text("4.9", "-Infinity"), "events.t_us[7] is -Infinity; it must be a finite number"),
    ("overflowing time", text("4.9", "1e999"), "events.t_us[7] is Infinity; it must be a finite number"),
    ("negative time", put("events.t_us.7", -0.5), "events.t_us[7] is -0.5; it must be a number >= 0"),
    ("step outside steps", put("events.step.8", 99), "events.step[8] is 99; it must be a step of the timeline's steps 3:5"),
    ("fractional bytes", put("events.bytes.9", 1.5), "events.bytes[9] is 1.5; it must be an integer"),
    ("boolean bytes", put("events.bytes.9", True), "events.bytes[9] is true; it must be an integer"),
    ("negative live bytes", put("events.live_bytes.10", -1), "events.live_bytes[10] is -1; it must be an integer >= 0"),
    ("op index past ops", put("events.op.11", 5), "events.op[11] is 5; it must be an index into ops, which holds 2 names"),
    ("nested op", put("events.op.3", [1]), "events.op[3] is [1]; it must be an integer"),
    ("null step", put("events.step.0", None), "events.step[0] is null; it must be an integer"),
    ("columns of different lengths", drop("events.bytes.19"), "events.bytes has 19 rows and events.t_us 20"),
    ("events a list of rows", put("events", [[0.0, 3, 64, 64, 0]]), "expected '{' starting events"),
    ("unknown column", put("events.size", [1]), 'events."size" is not a column of events'),
    ("missing column", drop("events.op"), "events lacks the column op"),
    ("op name not a string", put("ops.1", 7), "ops[1] is 7; it must be an op's name, a string"),
    ("per-step boolean", put("per_step.alloc_bytes.1", False), "per_step.alloc_bytes[1] is false; it must be an integer"),
    ("per-step rows", put("per_step", {k: [3, 4, 4] for k in timeline()["per_step"]}), "per_step has 3 rows; steps 3:5 has 2"),
    ("top op count a string", put("top_ops.0.alloc_count", "1"), 'top_ops[0].alloc_count is "1"; it must be an integer'),
    ("top op not an object", put("top_ops.0", "aten::mm"), 'top_ops[0] is "aten::mm"; it must be an object'),
    ("open window", put("steps", "3:"), 'steps is "3:"; it must be a bounded window of steps'),
    ("steps not a window", put("steps", "a:b"), "steps start must be a non-negative integer"),
    ("another format", put("format", "chrome-trace"), 'format is "chrome-trace"; expected a profwin memory timeline'),
    (
        "newer version",
        put("version", 3),
        "version is 3; this reader reads versions 1 to 2: it was written by a newer profwin-memory (pip install -U profwin-memory)",
    ),
    ("version 0", put("version", 0), "version is 0; this reader reads versions 1 to 2"),
    ("no format", drop("format"), "format is missing"),
    ("invalid JSON in a column", text("4.9,", "4.9,,"), "invalid JSON in events.t_us[8]: expected a value at character"),
    (
        "a 5,000-digit integer",
        text('"bytes":[64,-64,64,-64,64', '"bytes":[64,-64,64,-64,' + "9" * 5000),
        "invalid number in events.bytes[4] at character",
    ),
    ("a key twice", text('"device"', '"version":1,"device"'), '"version" appears twice at the top level'),
    ("truncated", lambda body: body[: len(body) // 2], "the file ends inside"),
    ("data after the document", lambda body: body + " {}", "unexpected data after the memory timeline at character"),
]


@pytest.mark.parametrize(("label", "edit", "says"), MALFORMED, ids=[case[0] for case in MALFORMED])
def test_a_malformed_value_is_an_error_naming_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fast: str, label: str, edit: Any, says: str
) -> None:
    body = edit(json.dumps(timeline(), separators=(",", ":")))
    path = write(tmp_path / "bad.memory_timeline.json.gz", body)
    with pytest.raises(TimelineError) as caught:
        load_timeline(path, events=False)
    assert says in caught.value.reason, (label, caught.value.reason)
    assert main(["summarize", str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"profwin-memory: cannot read {path}: {caught.value.reason}\n"
    assert "internal error" not in err


def test_string_totals_were_an_internal_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: summarize rendered totals it had not checked."""
    data = timeline()
    data["totals"]["alloc_bytes"] = "5"
    path = write(tmp_path / "s.memory_timeline.json", json.dumps(data))
    assert main(["summarize", str(path)]) == 1
    assert capsys.readouterr().err == (f'profwin-memory: cannot read {path}: totals.alloc_bytes is "5"; it must be an integer\n')


def test_whitespace_inside_a_column_is_dropped_as_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: str) -> None:
    """A flood between two numbers of a column: refused at the limit, with the flood never held."""
    monkeypatch.setattr(timeline_module, "MAX_TIMELINE_BYTES", 24 << 20)
    body = json.dumps(timeline()).replace('"t_us": [0.0, ', '"t_us": [0.0' + " " * (32 << 20) + ", ")
    path = write(tmp_path / "flood.memory_timeline.json.gz", body)
    tracemalloc.start()
    try:
        with pytest.raises(
            TimelineError, match=r"holds more than 25,165,824 bytes decompressed, the limit for a memory timeline"
        ):
            load_timeline(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak


def test_a_column_bomb_stops_at_the_limit_in_bounded_memory(
    tmp_path: Path, in_child: Callable[..., tuple[list[str], int]]
) -> None:
    """A gzip bomb that is a valid column going on past the real limit: read at full speed and
    refused there, the densest numbers ("0,") never holding more than a batch in memory (peak RSS
    of a fresh interpreter; tracemalloc would slow 100 million allocations down too much)."""
    bomb = tmp_path / "bomb.memory_timeline.json.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as f:
        f.write(b'{"format":"profwin.memory-timeline","version":1,"steps":"3:5","events":{"t_us":[')
        zeros = b"0," * (1 << 19)
        for _ in range((timeline_module.MAX_TIMELINE_BYTES >> 20) + 1):
            f.write(zeros)
    assert bomb.stat().st_size < timeline_module.MAX_TIMELINE_BYTES // 100
    child = (
        "import sys\n"
        "from profwin_memory import TimelineError, load_timeline\n"
        "try:\n    load_timeline(sys.argv[1], events=False)\nexcept TimelineError as exc:\n    print(exc.reason)"
    )
    (said,), peak_kib = in_child(child, str(bomb))
    assert said == "holds more than 268,435,456 bytes decompressed, the limit for a memory timeline"
    assert peak_kib < 100 << 10, peak_kib


def older(data: dict[str, Any], *, lacking: tuple[str, ...], column: bool) -> dict[str, Any]:
    """``data`` as a version 1 file may hold it: without the totals ``lacking`` (and the per-step free_count)."""
    data = {**data, "version": 1, "totals": {k: v for k, v in data["totals"].items() if k not in lacking}}
    if column:
        data["per_step"] = {k: v for k, v in data["per_step"].items() if k != "free_count"}
    return data


@pytest.mark.parametrize("sort_keys", [False, True])
@pytest.mark.parametrize(
    ("lacking", "column"),
    [
        (("free_count",), False),
        (("frees_of_older_blocks",), False),
        (("free_count", "outside_steps", "frees_of_older_blocks"), True),
    ],
)
def test_a_version_1_timeline_of_an_earlier_shape_is_read(
    tmp_path: Path, fast: str, lacking: tuple[str, ...], column: bool, sort_keys: bool
) -> None:
    """A timeline written before the shape grew (totals.free_count, frees_of_older_blocks) was
    refused with "totals.free_count is missing"; version 1 is read, what it lacks is null. In
    any key order: the version may come after the totals."""
    data = older(timeline(20), lacking=lacking, column=column)
    path = write(tmp_path / "t.memory_timeline.json", json.dumps(data, sort_keys=sort_keys))
    read = load_timeline(path, events=False)
    assert read["totals"] == {**data["totals"], **dict.fromkeys(lacking)}
    assert read["version"] == 1
    assert load_timeline(path)["per_step"].keys() == data["per_step"].keys()


@pytest.mark.parametrize("sort_keys", [False, True])
def test_version_2_has_every_total_and_column(tmp_path: Path, fast: str, sort_keys: bool) -> None:
    data = older(timeline(20), lacking=(), column=True)
    data["version"] = 2
    path = write(tmp_path / "t.memory_timeline.json", json.dumps(data, sort_keys=sort_keys))
    with pytest.raises(TimelineError, match="per_step lacks the column free_count"):
        load_timeline(path)


def test_what_profwin_memory_writes_is_the_newest_version() -> None:
    from profwin_memory.cpu_timeline import TIMELINE_VERSION
    from profwin_memory.timeline import VERSION

    assert TIMELINE_VERSION == VERSION == timeline()["version"] == 2
