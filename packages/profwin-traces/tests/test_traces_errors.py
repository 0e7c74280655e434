"""Bad input to profwin_traces: each a clear error naming the file, and never a partial output."""

from __future__ import annotations

import gzip
import json
import os
import select
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import profwin_traces
from profwin import ConfigError, PluginError
from profwin.errors import ArgumentTypeError
from profwin_traces import TraceError, TraceReader, summarize, trim, tty_progress
from profwin_traces.scan import Columns

STEPS = [
    {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": 100.0 * k, "dur": 90.0}
    for k in range(3)
]


def trace_text(events: list[dict[str, Any]] = STEPS) -> str:
    return json.dumps({"schemaVersion": 1, "traceEvents": events, "traceName": "t"}, indent=2)


def error_of(path: Path, **kw: Any) -> str:
    with pytest.raises(TraceError) as info:
        summarize(path, **kw)
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{path}: ")
    return info.value.reason


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress(trace_text().encode())
    path = tmp_path / "cut.pt.trace.json.gz"
    path.write_bytes(data[: len(data) // 2])
    assert "gzip stream is truncated" in error_of(path)


def test_truncated_and_corrupt_gzip_of_a_large_trace(tmp_path: Path) -> None:
    """Cut or damaged past the first buffers, where the fast path reads bytes in batches."""
    ops = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 50}", "pid": 1, "tid": 1, "ts": float(i), "dur": 0.5,
            "args": {"External id": i, "seed": (i * 7919) % 104729}} for i in range(60_000)]  # fmt: skip
    data = gzip.compress(trace_text(STEPS + ops).encode(), 1)
    cut = tmp_path / "cut.pt.trace.json.gz"
    cut.write_bytes(data[: len(data) * 3 // 4])
    assert "gzip stream is truncated" in error_of(cut)
    damaged = bytearray(data)
    damaged[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64
    bad = tmp_path / "bad.pt.trace.json.gz"
    bad.write_bytes(bytes(damaged))
    assert error_of(bad).startswith(("corrupt gzip data", "the gzip stream is truncated", "invalid JSON", "not UTF-8"))


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(trace_text().encode()))
    data[20:40] = b"\x00" * 20
    path = tmp_path / "bad.json.gz"
    path.write_bytes(bytes(data))
    assert "gzip" in error_of(path)


def test_truncated_json(tmp_path: Path) -> None:
    text = trace_text()
    path = tmp_path / "cut.json"
    path.write_text(text[: text.index("ProfilerStep#2")])
    assert "truncated" in error_of(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"model": "llama", "layers": 2}', "no 'traceEvents' key (top-level keys: ['layers', 'model'])"),
        ('"just a string"', "expected '{' or '['"),
        ('{"traceEvents": {"a": 1}}', "'traceEvents' must be an array"),
        ('{"traceEvents": [1, 2]}', "event 0 is int, not an object"),
        ('{"traceEvents": []}', "the trace has no events"),
        ('{"traceEvents": [{"ph": "X"}] trailing', "expected ',' or '}'"),
        ("", "found the end of the file"),
    ],
)
def test_not_a_trace(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    assert expected in error_of(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b'{"traceEvents": [{"name": "\xff\xfe"}]}')
    assert error_of(path).startswith("not UTF-8 text at offset 27 (invalid start byte); expected a Chrome/Kineto trace")


_MIB = 1 << 20


@pytest.mark.parametrize("native", ["1", "0"])
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
@pytest.mark.parametrize(
    ("at", "bad"),
    [
        (0, b"\xff"),  # in the first event's name
        (_MIB - 1, b"\xe2\x82X"),  # a character cut by the first read, broken after it
        (_MIB, b"\xc3"),
        (2 * _MIB + 1, b"\xff"),
    ],
)
def test_bytes_that_are_not_utf8_are_named_where_they_are_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: str, suffix: str, at: int, bad: bytes
) -> None:
    """The offset counts from the file's first byte (of its decompressed text for a gzip file),
    whichever reader meets the bytes and however the reads cut them: it counted from the start of
    the block being decoded (a trace of 1.2 MB was "near byte 59" with the scanner, "near byte
    1212378" without, for a bad byte at 1,214,373)."""
    monkeypatch.setenv("PROFWIN_TRACES_NATIVE", native)
    events = ",\n".join(json.dumps({**STEPS[0], "name": f"op{k}", "ts": k}) for k in range(500))
    head = f'{{"traceEvents": [{events}, {{"ph": "X", "name": "'.encode()
    data = head + b"a" * (3 * _MIB) + b'", "ts": 1, "dur": 1, "pid": 1, "tid": 1}]}'
    offset = len(head) + 1 if at == 0 else at
    data = data[:offset] + bad + data[offset + len(bad) :]
    path = tmp_path / f"x{suffix}"
    path.write_bytes(gzip.compress(data, 1) if suffix.endswith(".gz") else data)
    where = "of the decompressed text " if suffix.endswith(".gz") else ""
    assert error_of(path).startswith(f"not UTF-8 text at offset {offset:,} {where}(")


def test_invalid_json_in_the_middle_of_a_big_file_fails_at_once(tmp_path: Path) -> None:
    events = STEPS * 2000
    text = trace_text(events)
    cut = text.index("ProfilerStep#1", len(text) // 2)
    path = tmp_path / "x.json"
    path.write_text(text[:cut] + 'ProfilerStep#1", nonsense' + text[cut + 20 :])
    assert "invalid JSON in event" in error_of(path)


def test_missing_file(tmp_path: Path) -> None:
    assert "cannot open" in error_of(tmp_path / "nope.json")


def test_no_step_markers(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(trace_text([{"ph": "X", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]))
    reason = error_of(path)
    assert "no step markers found" in reason
    assert "torch: ProfilerStep#(\\d+)$" in reason
    assert "sglang: " in reason
    assert "vllm: " in reason


def test_window_outside_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(trace_text())
    assert error_of(path, window="5:9") == "window 5:9 is outside the trace: it holds torch steps 0..2"
    out = tmp_path / "out.json"
    with pytest.raises(TraceError, match="outside the trace"):
        trim(path, "5:9", out)
    assert list(tmp_path.iterdir()) == [path]


def test_bad_window_and_output(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(trace_text())
    with pytest.raises(ConfigError, match="exactly one ':'"):
        summarize(path, window="20-80")
    with pytest.raises(ArgumentTypeError, match=r"^window: must be Window \| str \(got None\)$"):
        trim(path, None, tmp_path / "o.json")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="does not exist"):
        trim(path, "0:1", tmp_path / "missing" / "o.json")
    with pytest.raises(ConfigError, match="must not be the input"):
        trim(path, "0:1", path)


def test_interrupted_trim_leaves_no_output(tmp_path: Path) -> None:
    """An exception while the output is being written (here from the progress callback in the
    second pass) removes the temporary file and never creates the final one."""
    path = tmp_path / "x.json"
    path.write_text(trace_text())
    size = path.stat().st_size

    def progress(done: int, total: int) -> None:
        assert total == 2 * size
        if done > size:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        trim(path, "0:2", tmp_path / "out.json.gz", progress=progress)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


@settings(max_examples=25, deadline=None)
@given(
    chunk=st.integers(min_value=1, max_value=64),
    names=st.lists(st.text(min_size=0, max_size=12), min_size=1, max_size=6),
    indent=st.sampled_from([None, 0, 2]),
)
def test_reader_matches_json_load_at_any_chunk_size(
    tmp_path_factory: Any, chunk: int, names: list[str], indent: int | None
) -> None:
    """Chunk edges anywhere (inside strings, numbers, multi-byte characters) do not change what
    is read, and each event's text is exactly its source."""
    events = [{"ph": "X", "name": n, "ts": 1.5 + i, "dur": 10**i, "args": {"k": [n, {"x": None}]}} for i, n in enumerate(names)]
    doc = {"schemaVersion": 1, "deviceProperties": [{"name": "ü"}], "traceEvents": events, "baseTimeNanoseconds": 12345678901234}
    text = json.dumps(doc, indent=indent, ensure_ascii=False)
    path = tmp_path_factory.mktemp("r") / "t.json"
    path.write_text(text, encoding="utf-8")
    with TraceReader(path, chunk_chars=chunk) as reader:
        seen = list(reader.raw_events())
    assert [e for e, _, _ in seen] == events
    assert all(json.loads(text[offset : offset + length]) == e for e, offset, length in seen)
    assert reader.header == {k: v for k, v in doc.items() if k != "traceEvents"}
    assert reader.keys_before_events == ["schemaVersion", "deviceProperties"]


def test_columns_spill_to_disk_and_read_back_in_order() -> None:
    columns = Columns("qd", spill_rows=3)
    for i in range(10):
        columns.columns[0].append(i)
        columns.columns[1].append(i / 2)
        columns.maybe_spill()
    assert len(columns) == 10
    rows = [(a, b) for ints, floats in columns.chunks() for a, b in zip(ints, floats, strict=True)]
    assert rows == [(i, i / 2) for i in range(10)]
    columns.close()


def test_columns_extended_by_arrays_keep_file_order_across_the_spill() -> None:
    """Rows appended one at a time and whole arrays (the numpy filler's way, written straight to
    the file once the table spills) come back in the order they went in."""
    import numpy as np  # the dev environment has the fast extra

    columns = Columns("qd", spill_rows=5)
    expected: list[tuple[int, float]] = []
    for i, size in enumerate([2, 2, 4, 0, 7, 1, 3]):
        ints = np.arange(100 * i, 100 * i + size, dtype=np.int64)
        columns.extend(ints, ints / 4.0)
        expected += [(int(v), v / 4.0) for v in ints.tolist()]
        if i % 2:  # and a row the standard filler's way
            columns.columns[0].append(-i)
            columns.columns[1].append(-i / 4.0)
            columns.maybe_spill()
            expected.append((-i, -i / 4.0))
    assert len(columns) == len(expected)
    rows = [(a, b) for ints, floats in columns.chunks() for a, b in zip(ints, floats, strict=True)]
    assert rows == expected
    columns.close()


def test_tty_progress_only_on_a_terminal(tmp_path: Path) -> None:
    with open(tmp_path / "log", "w") as not_tty:
        assert tty_progress("summarize", stream=not_tty) is None
    leader, follower = os.openpty()
    try:
        with os.fdopen(follower, "w", closefd=True) as tty:
            progress = tty_progress("summarize x", stream=tty, min_bytes=100)
            assert progress is not None
            progress(10, 50)  # under min_bytes: silent
            progress(0, 4 << 20)
            progress(4 << 20, 4 << 20)
        shown = ""
        while not shown.endswith("\n") and select.select([leader], [], [], 5)[0]:
            shown += os.read(leader, 4096).decode()  # a pty may deliver the writes in pieces
    finally:
        os.close(leader)
    assert shown.replace("\r\n", "\n") == "\rsummarize x:   0% (0/4 MiB)\rsummarize x: 100% (4/4 MiB)\n"


def test_plot_needs_matplotlib_or_draws(tmp_path: Path) -> None:
    from profwin_traces import plot_steps

    path = tmp_path / "x.json"
    path.write_text(trace_text())
    summary = summarize(path, window="1:2")
    png = tmp_path / "steps.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(PluginError, match=r"pip install 'profwin-core\[plot\]'"):
            plot_steps(summary, png)
        assert not png.exists()
    else:
        assert plot_steps(summary, png) == png
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("paths", "message"),
    [
        (["a", 7], r"^paths\[1\]: must be str \| Path \(got 7\)$"),
        ("a.json", r"^paths: must be Iterable\[str \| Path\] \(got 'a.json'\)$"),
    ],
)
def test_a_bad_argument_names_the_parameter_the_value_and_the_type(paths: object, message: str) -> None:
    """A wrong type is an ArgumentTypeError: a TypeError of profwin's family."""
    from profwin_traces import trace_files

    with pytest.raises(ArgumentTypeError, match=message):
        trace_files(paths)  # type: ignore[arg-type]


@pytest.mark.parametrize("call", ["diff", "trace_files", "summarize"])
def test_a_name_too_long_for_a_file_system_is_a_config_error(tmp_path: Path, call: str) -> None:
    """It was ``OSError: [Errno 36] File name too long`` from ``diff``'s folder check (the bad-arguments
    catalogue); it is now said before any file is looked at, naming the argument."""
    long = str(tmp_path / ("x" * 300))
    run = {
        "diff": lambda: profwin_traces.diff(long, long),
        "trace_files": lambda: profwin_traces.trace_files([long]),
        "summarize": lambda: profwin_traces.summarize(long),
    }[call]
    with pytest.raises(ConfigError, match=r"cannot be a file name: a name in it is 300 bytes, over the 255 a file system allows"):
        run()
