"""The compiled scanner (``profwin_traces._scan``, built by ``profwin_traces.native``): built here,
taking exactly the events the typed decoder takes, leaving the rest to the standard decoder, and
given up without a trace where it cannot be built.

The reader's three ways (compiled scanner, msgspec, standard library) are compared on random
traces written as text, so that what ``json.dumps`` never writes is there too: escapes in keys
and values, ``NaN``, numbers as strings, floats and long integers for ``pid``, ``args`` that is
not an object, duplicate keys, non-ASCII text, odd whitespace between events.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profwin_traces import TraceError, columnar, summarize
from profwin_traces.columnar import column_decoder, numpy_or_none
from profwin_traces.native import SOURCE, compiled, native_status
from profwin_traces.reader import fast_decoder


def _scan(data: bytes, base: int = 0) -> dict[str, Any]:
    module = compiled()
    assert module is not None, native_status()
    scanner = module.Scanner()
    *columns, stop, stop_chars, status = scanner.scan(data, base)
    np = numpy_or_none()
    names = ("offset", "length", "start", "size", "ts", "dur", "kind", "corr")
    dtypes = (np.int64, np.int32, np.int64, np.int32, np.float64, np.float64, np.int32, np.float64)
    found = {n: np.frombuffer(c, d).tolist() for n, c, d in zip(names, columns, dtypes, strict=True)}
    found["keys"], found["raw"] = scanner.keys(found["kind"])
    return {**found, "stop": stop, "stop_chars": stop_chars, "status": status}


def test_the_scanner_is_built_here() -> None:
    assert native_status().startswith("on ("), native_status()


def test_a_trace_the_scanner_reads_whole_never_imports_msgspec(tmp_path: Path) -> None:
    """msgspec decodes only the batches the scanner leaves (6 ms of a command's start otherwise)."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}}]
    events += [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": k * 10.0,
                "dur": 9.0} for k in range(50)]  # fmt: skip
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=1))
    code = "import sys\nfrom profwin_traces import summarize\nprint(len(summarize(sys.argv[1]).steps), 'msgspec' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["50", "False"]


def test_a_msgspec_that_does_not_import_leaves_every_batch_to_the_standard_decoder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.pt.trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": k * 10.0, "dur": 9.0} for k in range(30)]
    path.write_text(json.dumps({"traceEvents": [*events, {"ph": "X", "name": "ProfilerStep#0", "ts": 0, "dur": 400}]}))
    monkeypatch.setenv("PROFWIN_TRACES_NATIVE", "0")  # every batch to the decoder
    expected = summarize(path).to_dict()
    monkeypatch.setattr(columnar, "_column_structs", lambda: None)
    with pytest.raises(ValueError, match="does not import"):
        columnar._decode_columns(b"[]")
    assert summarize(path).to_dict() == expected


def test_what_the_scanner_takes_and_where_it_stops() -> None:
    events = [
        '{"ph": "X", "name": "é\\"x", "pid": 1, "tid": "t", "ts": 1.5, "dur": 2, "args": {"correlation": 7}}',
        '{"name": "b", "ts": 3, "args": {"x": [1, {"y": null}], "correlation": null}}',
        '{"ph": "X", "pid": 1, "tid": "t", "name": "é\\"x", "ts": 4}',
    ]
    text = "  ,\n".join(events) + "]"
    data = text.encode()
    found = _scan(data, 100)
    assert found["status"] == 1  # stopped at the last event, which a "]" follows
    assert found["ts"] == [1.5, 3.0]
    assert found["dur"][0] == 2.0
    assert found["corr"][0] == 7.0
    assert found["corr"][1] != found["corr"][1]
    assert found["offset"] == [100, 100 + text.index(events[1])]
    assert found["length"] == [len(e) for e in events[:2]]
    assert found["start"][1] == data.index(events[1].encode())
    assert found["size"][0] == len(events[0].encode())
    assert found["keys"][0] == ("X", None, b'"\xc3\xa9\\"x"', 1, "t")  # an escaped string: its raw bytes
    assert found["keys"][1] == (None, None, "b", None, None)
    assert found["raw"] == [0]
    assert data[found["stop"] :].startswith(events[2].encode())
    assert found["stop_chars"] == text.index(events[2])
    # Cut anywhere, a scan takes a prefix of the events and stops at an event's start.
    for cut in range(len(data)):
        part = _scan(data[:cut])
        assert part["status"] in (0, 2) or cut == len(data)
        assert part["ts"] == found["ts"][: len(part["ts"])]
        assert data[part["stop"] :].startswith(b"{") or part["stop"] == cut


@pytest.mark.parametrize(
    "odd",
    [
        '{"ts": "12"}', '{"ts": NaN}', '{"dur": 1e999}', '{"args": [1]}', '{"args": {"correlation": "3"}}',
        '{"name": 5}', '{"pid": 1.5}', '{"pid": 123456789012345678901}', '{"ts": 1, "ts": 2}', '{"t\\u0073": 1}',
        '{"args": {"c\\u006frrelation": 1}}', "[1]", '{"ts": 1,}', '{"name": "\\x"}', '{"name": "\x01"}',
    ],
)  # fmt: skip
def test_an_event_the_typed_decoder_refuses_is_left_to_the_standard_one(odd: str) -> None:
    data = ('{"ts": 1}, ' + odd + ', {"ts": 2}]').encode()
    found = _scan(data)
    assert (found["ts"], found["status"]) == ([1.0], 2)
    assert data[found["stop"] :].startswith(odd.encode())


def test_the_kinds_table_is_emptied_on_reset() -> None:
    scanner = compiled().Scanner()
    scanner.scan(b'{"name": "a"}, {"name": "b"}, ', 0)
    assert (scanner.kinds, scanner.kind_bytes > 0) == (2, True)
    scanner.reset()
    assert (scanner.kinds, scanner.kind_bytes) == (0, 0)
    with pytest.raises(IndexError):
        scanner.keys([0])


@settings(max_examples=300, deadline=None)
@given(cuts=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(list(b'{}[]",:\\ 0e-.nu\x00\xff\xc3\xa9'))), max_size=4))
def test_an_event_taken_from_mangled_bytes_is_what_json_reads(cuts: list[tuple[int, int]]) -> None:
    """Bytes of a valid array changed here and there: whatever the scanner takes is valid JSON
    whose fields are the columns; it stops at the first event it does not take, never past it."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm é", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3, "args": {"correlation": 4}},
        {"name": "ProfilerStep#1", "ts": 1e3, "args": {"x": [1, {"y": None}], "s": 'q"\\'}},
        {"ph": "M", "name": "thread_name", "pid": "p", "tid": None, "args": {"name": "main"}},
    ]
    data = bytearray(", ".join(json.dumps(e, ensure_ascii=False) for e in events * 3).encode() + b"]")
    for at, byte in cuts:
        data[at % len(data)] = byte
    found = _scan(bytes(data))
    columns = zip(found["start"], found["size"], found["ts"], found["dur"], found["corr"], found["keys"], strict=True)
    for start, size, ts, dur, corr, key in columns:
        event = json.loads(bytes(data[start : start + size]))
        args = event.get("args", {})
        assert _same(ts, event.get("ts"))
        assert _same(dur, event.get("dur"))
        assert _same(corr, args.get("correlation"))
        # Decoded by the scanner where plain, else raw bytes: either way, the value and type json reads.
        decoded = [json.loads(v) if type(v) is bytes else v for v in key]
        assert [(type(v), v) for v in decoded] == [(type(event.get(k)), event.get(k)) for k in _KIND_FIELDS]
    taken = found["start"][-1] + found["size"][-1] if found["start"] else 0
    assert found["stop"] >= taken


_KEY_STRINGS = st.one_of(
    st.text(max_size=6).map(lambda t: json.dumps(t, ensure_ascii=False)),
    st.text(max_size=6).map(json.dumps),  # \\u escapes
)
_KEY_NUMBERS = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(["0", "-0", "1.0", "1e3", "-12", "999999999999999999", "1000000000000000000", "-999999999999999999"]),
    st.sampled_from(["9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616"]),
    st.just("null"),
)


@settings(max_examples=400, deadline=None)
@given(
    texts=st.lists(_KEY_STRINGS, min_size=3, max_size=3),
    ids=st.lists(st.one_of(_KEY_NUMBERS, _KEY_STRINGS), min_size=2, max_size=2),
)
def test_a_kinds_key_is_what_json_reads(texts: list[str], ids: list[str]) -> None:
    """The scanner decodes a plain string or integer of a kind's key itself and leaves every other
    value raw: whichever it does, the value and its type are json's."""
    text = "{" + ", ".join(f'"{k}": {v}' for k, v in zip(_KIND_FIELDS, texts + ids, strict=True)) + "}"
    found = _scan(f'{text}, {{"ts": 1}}]'.encode())
    if not found["keys"]:  # refused (a pid past 64 bits, say): the standard decoder reads it or names its error
        return
    key, want = found["keys"][0], json.loads(text)
    got = [json.loads(v) if type(v) is bytes else v for v in key]
    assert [(type(v), v) for v in got] == [(type(want.get(k)), want.get(k)) for k in _KIND_FIELDS]
    assert found["raw"] == ([0] if any(type(v) is bytes for v in key) else [])


_KIND_FIELDS = ("ph", "cat", "name", "pid", "tid")


def _same(column: float, value: Any) -> bool:
    """A column's float is the JSON value, or nan for an absent or null one."""
    return column != column if value is None else column == float(value)


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 40), st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.5, 20.0]), st.booleans()),
        max_size=60,
    )
)
def test_the_compiled_self_time_sums_are_numpys(events: list[tuple[int, int, float, bool]]) -> None:
    """``nest_kids`` gives, bit for bit, the sums ``columnar._parents`` and ``bincount`` give: on
    events that nest and on events that overlap without nesting, across lanes."""
    np = numpy_or_none()
    lane = np.array([e[0] for e in events], np.int64)
    ts = np.array([float(e[1]) for e in events])
    dur = np.array([e[2] for e in events])
    fresh = np.array([e[3] for e in events], bool)
    end = ts + dur
    order = columnar._nest_order(np, lane, ts, end)
    columns = (lane[order], ts[order], end[order], dur[order], fresh[order])
    parent, valid = columnar._parents(np, *columns[:3])
    valid &= columns[4]
    expected = np.bincount(parent[valid], weights=columns[3][valid], minlength=len(order))
    found = np.frombuffer(compiled().nest_kids(*columns), np.float64)
    assert found.tobytes() == expected.astype(np.float64).tobytes()


# -- the three ways agree on hostile text -----------------------------------------------------------

_STRINGS = st.sampled_from(["aten::mm", "é ✓", 'q"uote', "back\\slash", "tab\t", "\u2028", "ProfilerStep#1", ""])


def _text(value: Any, *, escape: bool) -> str:
    text = json.dumps(value, ensure_ascii=escape)
    return text


@st.composite
def _event(draw: Any, k: int) -> str:
    """One event's text: mostly what torch writes, now and then what the typed decoder refuses."""
    name = draw(st.sampled_from([f"ProfilerStep#{k}", "aten::mm", "aten::add"]) | _STRINGS)
    fields = {
        '"ph"': _text(draw(st.sampled_from(["X", "X", "M", "i"])), escape=False),
        '"cat"': _text(draw(st.sampled_from(["cpu_op", "user_annotation", "kernel", "cuda_runtime"])), escape=False),
        '"name"': _text(name, escape=draw(st.booleans())),
        '"pid"': draw(st.sampled_from(["1", "2", '"1"'])),
        '"tid"': draw(st.sampled_from(["1", "7", '"x"', "null"])),
        '"ts"': repr(100.0 * k + draw(st.integers(0, 50))),
        '"dur"': draw(st.sampled_from(["5", "0", "2.5", "1e1"])),
        '"args"': draw(st.sampled_from(['{"correlation": 3}', '{"name": "main"}', "{}", '{"a": [1, {"b": null}]}'])),
    }
    odd = draw(st.sampled_from([None] * 6 + ["ts", "pid", "args", "escape", "twice", "nan", "name"]))
    if odd == "ts":
        fields['"ts"'] = '"12"'
    elif odd == "pid":
        fields['"pid"'] = draw(st.sampled_from(["1.5", "123456789012345678901234"]))
    elif odd == "args":
        fields['"args"'] = "[1, 2]"
    elif odd == "escape":
        fields['"t\\u0073"'] = fields.pop('"ts"')
    elif odd == "nan":
        fields['"dur"'] = "NaN"
    elif odd == "name":
        fields['"name"'] = "7"
    keys = draw(st.permutations(list(fields)))
    items = [f"{key}: {fields[key]}" for key in keys if draw(st.integers(0, 9)) > 0 or key == '"name"']
    if odd == "twice":
        items.append(f'"ts": {100.0 * k}')
    separator: str = draw(st.sampled_from([", ", ",", ",\n  "]))
    return "{" + separator.join(items) + "}"


@st.composite
def _traces(draw: Any) -> str:
    events = [draw(_event(k)) for k in range(draw(st.integers(1, 30)))]
    separators = [draw(st.sampled_from([",", ", ", ",\n  ", "\n,\t"])) for _ in events]
    body = "".join(e + s for e, s in zip(events, separators, strict=True))[: -len(separators[-1])]
    opening: str = draw(st.sampled_from(["", "\n  "]))
    return '{"schemaVersion": 1, "traceEvents": [' + opening + body + "]}"


def _clear() -> None:
    for cached in (numpy_or_none, column_decoder, fast_decoder):
        cached.cache_clear()


def _summary(path: Path) -> Any:
    try:
        return summarize(path).to_dict()
    except TraceError as exc:
        return exc.reason


@settings(max_examples=150, deadline=None)
@given(text=_traces(), segment=st.sampled_from([2, 1 << 16]), kinds=st.sampled_from([0, columnar.MAX_KINDS]))
def test_the_three_ways_agree_on_hostile_text(tmp_path_factory: Any, text: str, segment: int, kinds: int) -> None:
    path = tmp_path_factory.mktemp("hostile") / "t.pt.trace.json"
    path.write_text(text, encoding="utf-8")
    results = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(columnar, "SEGMENT", segment)
        monkeypatch.setattr(columnar, "MAX_KINDS", kinds)  # 0: both kinds tables start again at every batch
        for fast, native in (("1", "1"), ("1", "0"), ("0", "1")):
            monkeypatch.setenv("PROFWIN_TRACES_FAST", fast)
            monkeypatch.setenv("PROFWIN_TRACES_NATIVE", native)
            _clear()
            results.append(_summary(path))
    _clear()
    assert results[0] == results[1]  # the same columns, so the same floats
    assert _rounded(results[0]) == _rounded(results[2])  # numpy sums in another order than the standard loop


def _rounded(value: Any) -> Any:
    """``value`` with every float to 9 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


# -- where it cannot be built --------------------------------------------------------------------


def test_without_a_compiler_the_reader_goes_on_with_msgspec(tmp_path: Path) -> None:
    trace = tmp_path / "t.pt.trace.json"
    events = [{"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": 10.0 * k, "dur": 5.0}
              for k in range(4)]  # fmt: skip
    trace.write_text(json.dumps({"traceEvents": events}, indent=1))
    code = (
        "import sys; from profwin_traces.native import native_status; print(native_status()); "
        "from profwin.cli import main; sys.exit(main(['summarize', sys.argv[1], '--json']))"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "CC": "false"}
    done = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    status, _, summary = done.stdout.partition("\n")
    assert status == "unavailable: false failed (exit 1): (no output)"
    built = subprocess.run([sys.executable, "-c", code, str(trace)], capture_output=True, text=True, timeout=120)
    assert built.stdout.startswith("on (")
    assert built.stdout.partition("\n")[2] == summary
    assert json.loads(summary)["steps"]
    assert not list((tmp_path / "cache" / "profwin" / "native").iterdir())  # no half-built library left


def test_the_source_ships_in_the_package() -> None:
    assert SOURCE.is_file()
    assert SOURCE.parent.name == "profwin_traces"


_DIGITS = st.text("0123456789", min_size=1, max_size=26)


@st.composite
def json_numbers(draw: Any) -> str:
    """A JSON number's text: long runs of digits (past 8, 16 and 19 of them), a fraction with
    leading zeros, an exponent."""
    whole = draw(st.sampled_from(["0", draw(_DIGITS).lstrip("0") or "0"]))
    text = draw(st.sampled_from(["", "-"])) + whole
    if draw(st.booleans()):
        text += "." + draw(st.sampled_from(["", "0", "000", "0" * 9])) + draw(_DIGITS)
    if draw(st.booleans()):
        text += draw(st.sampled_from(["e", "E", "e+", "e-", "E-"])) + str(draw(st.integers(0, 400)))
    return text


@settings(max_examples=3000, deadline=None)
@given(ts=json_numbers(), dur=json_numbers(), other=json_numbers(), gap=st.sampled_from(["", " ", "\n  "]))
def test_numbers_are_read_as_python_reads_them(ts: str, dur: str, other: str, gap: str) -> None:
    """``ts`` and ``dur`` bit for bit ``float(text)`` (nan: not finite, left to the standard
    reader), and a number skipped inside ``args`` ends where it ends."""
    event = f'{{"ts":{gap}{ts}{gap},"args":{{"n":{other}{gap},"correlation":{gap}{dur}}},"dur":{dur}{gap}}}'
    data = (event + "," + event + "]").encode()
    found = _scan(data)
    want_ts, want_dur = float(ts), float(dur)
    if not (math.isfinite(want_ts) and math.isfinite(want_dur)):
        assert (found["status"], found["stop"]) == (2, 0)  # left to the standard reader, which says why
        return
    assert found["status"] == 1, found
    assert [struct.pack("<d", v) for v in found["ts"] + found["dur"] + found["corr"]] == [
        struct.pack("<d", v) for v in (want_ts, want_dur, want_dur)
    ]
    assert found["size"] == [len(event)]
