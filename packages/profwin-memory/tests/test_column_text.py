"""Counting a column from its text (profwin_memory.column_text): it never accepts a batch the
checking decoder refuses, counts every batch in the plain form, and spares summarize a Python
number per element; numpy is imported only for a file past NUMPY_AFTER_CHARS of columns."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import profwin_memory.timeline as timeline_module
from profwin_memory import column_text
from profwin_memory.column_text import ColumnCounter
from profwin_memory.timeline import Rule, _broken, load_timeline

pytest.importorskip("numpy")

# (integer, low, high): the rules of timeline.EVENT_COLUMNS and PER_STEP_COLUMNS, a step within
# steps (3:5, 100:108), an op index within ops, and bounds at the edges of a value type.
RULES = [
    (True, 0, None),
    (True, None, None),
    (False, 0, None),
    (False, None, None),
    (True, 3, 5),
    (True, 100, 108),
    (True, 0, 1),
    (True, 0, 40),
    (True, 0, 100),
    (True, 5, 1000),
    (True, 0, 10_000),
    (True, 0, 10**9),
]


def accepted(text: str, integer: bool, low: int | None, high: int | None) -> int:
    """What the checking reader does with the batch: its length when every element keeps the rule, else 0."""
    try:
        values = json.loads(text)
    except ValueError:  # invalid JSON, or past Python's int-string limit
        return 0
    rule = Rule(integer=integer, low=low)
    return len(values) if all(_broken(value, rule, low, high) == "" for value in values) else 0


def number(rng: random.Random, integer: bool) -> str:
    digits = rng.choice([1, 1, 2, 3, 5, 9, 17, 18, 19, 20, 400])
    text = "0" if rng.random() < 0.15 else rng.choice("123456789") + "".join(rng.choices("0123456789", k=digits - 1))
    if rng.random() < 0.3:
        text = "-" + text
    if (not integer or rng.random() < 0.1) and rng.random() < 0.7:
        text += "." + "".join(rng.choices("0123456789", k=rng.choice([1, 2, 3, 17, 18, 19])))
    return text


def mutated(rng: random.Random, text: str) -> str:
    """``text`` with up to three characters replaced, inserted or removed."""
    chars = list(text)
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        at, char = rng.randrange(len(chars) + 1), rng.choice("0123456789,,--..eE+ []a\u00e9")
        roll = rng.random()
        if roll < 0.4 and chars:
            chars[min(at, len(chars) - 1)] = char
        elif roll < 0.7:
            chars.insert(at, char)
        elif chars:
            del chars[min(at, len(chars) - 1)]
    return "".join(chars)


def counted(text: str, integer: bool, low: int | None, high: int | None) -> int:
    """The counter's answer for one batch: its count, or 0 where it hands the batch on."""

    def refuse(_: str) -> list[Any]:
        raise ValueError("handed on")

    decode = ColumnCounter().decoder(integer, low, high, refuse)
    assert decode is not None
    assert decode is not refuse
    try:
        return len(decode(text))
    except ValueError:
        return 0


def timeline(events: int) -> dict[str, Any]:
    """A valid timeline of ``events`` rows (steps 100:102, 40 ops), every column in the plain form."""
    return {
        "format": "profwin.memory-timeline", "version": 1, "steps": "100:102",
        "totals": dict.fromkeys(timeline_module.TOTALS, 0) | {"peak_step": 100},
        "per_step": {name: [0, 0] for name in timeline_module.PER_STEP_COLUMNS} | {"step": [100, 101]},
        "top_ops": [], "ops": ["aten::mm"] * 40,
        "events": {"t_us": [i * 0.7 for i in range(events)], "step": [100 + i % 2 for i in range(events)],
                   "bytes": [(-1) ** i * 64 for i in range(events)], "live_bytes": [64 * (i % 2) for i in range(events)],
                   "op": [i % 40 for i in range(events)]},
    }  # fmt: skip


@pytest.fixture
def numpy_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFWIN_TRACES_FAST", "1")
    monkeypatch.setattr(column_text, "NUMPY_AFTER_CHARS", 0)


@pytest.mark.parametrize("seed", range(4))
def test_a_batch_is_counted_only_where_the_checking_reader_accepts_it(numpy_at_once: None, seed: int) -> None:
    """Near-valid batches (valid numbers, then characters replaced, inserted, removed): whatever
    the counter counts, the checking reader accepts with the same length; and it counts most."""
    rng = random.Random(seed)
    counts = 0
    for _ in range(3000):
        integer, low, high = rng.choice(RULES)
        if high is not None and rng.random() < 0.7:
            values = [str(rng.randrange(max(0, low - 3), high + 3)) for _ in range(rng.randrange(1, 12))]
        else:
            values = [number(rng, integer) for _ in range(rng.randrange(1, 12))]
        text = "[" + mutated(rng, ",".join(values)) + "]"
        count = counted(text, integer, low, high)
        if count:
            counts += 1
            assert count == accepted(text, integer, low, high), (text, integer, low, high)
    assert counts > 300


@pytest.mark.parametrize(("integer", "low", "high"), RULES)
def test_every_batch_in_the_plain_form_is_counted(numpy_at_once: None, integer: bool, low: int | None, high: int | None) -> None:
    rng = random.Random(35)
    top = high if high is not None else 10**18 if integer else 10**15  # json writes 1e16 and up with an exponent
    for _ in range(300):
        values: list[Any] = [
            rng.randrange(low or 0, max(low or 0, min(top, 10 ** rng.randrange(1, 19))) + 1) for _ in range(rng.randrange(1, 40))
        ]
        values = [min(value, top - 1) for value in values]
        if low is None:
            values = [-value if rng.random() < 0.5 else value for value in values]
        if not integer:
            values = [value + rng.randrange(10) / 10 if rng.random() < 0.5 else value for value in values]
        text = json.dumps(values, separators=(",", ":"))
        assert counted(text, integer, low, high) == len(values), text


@pytest.mark.parametrize(
    ("text", "rule", "why"),
    [
        ("[1,2, 3]", (True, 0, None), "whitespace"),
        ("[1,2e3]", (False, 0, None), "an exponent"),
        ("[1," + "9" * 19 + "]", (True, 0, None), "19 digits"),
        ("[1." + "0" * 19 + "]", (False, 0, None), "19 digits after the dot"),
        ("[1,-0]", (True, 0, None), "a sign the rule forbids (msgspec reads -0 as 0)"),
        ("[3,4,40]", (True, 0, 40), "a value at the bound"),
        ("[3,4,2]", (True, 3, 5), "a value below the bound"),
        ("[1.5]", (True, 0, None), "a fraction where the rule wants an integer"),
        ("[1.2.3]", (False, 0, None), "two dots"),
        ("[012]", (True, 0, None), "a leading zero"),
        ("[1,-05]", (True, None, None), "a leading zero after a sign"),
        ("[5-3]", (True, None, None), "a sign inside a number"),
        ("[1,,2]", (True, 0, None), "an empty element"),
    ],
)
def test_anything_else_is_handed_to_the_checking_decoder(
    numpy_at_once: None, text: str, rule: tuple[bool, int | None, int | None], why: str
) -> None:
    assert counted(text, *rule) == 0, why


def test_summarize_makes_no_number_of_a_plain_column(
    tmp_path: Path, numpy_at_once: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past NUMPY_AFTER_CHARS (here 0) no element of a column in the plain form reaches the
    checking decoder: the 2 x 100,000 numbers of events.t_us and events.op are counted, not made."""
    decoded: list[int] = []
    typed = timeline_module._typed_decoder

    def spying(integer: bool | None, low: int | None, high: int | None) -> Callable[[str], list[Any]] | None:
        decode = typed(integer, low, high)
        if decode is None or integer is None:
            return decode

        def spy(text: str) -> list[Any]:
            decoded.append(text.count(",") + 1)  # the elements handed to it, decoded or refused
            return decode(text)

        return spy

    monkeypatch.setattr(timeline_module, "_typed_decoder", spying)
    events = 100_000
    data = timeline(events)
    path = tmp_path / "t.memory_timeline.json"
    path.write_text(json.dumps(data, separators=(",", ":")))
    assert load_timeline(path, events=False)["events"] == events
    assert sum(decoded) == 0
    data["events"]["op"][77_777] = 40  # an op index past ops: that batch is decoded, and named
    path.write_text(json.dumps(data, separators=(",", ":")))
    with pytest.raises(timeline_module.TimelineError, match=r"events\.op\[77777\] is 40; it must be an index into ops"):
        load_timeline(path, events=False)
    assert 0 < sum(decoded) < events


def test_numpy_is_imported_only_for_a_big_file(tmp_path: Path) -> None:
    """A timeline of a few MB (most are) is read without importing numpy, whose import takes
    longer than msgspec takes for it; one past NUMPY_AFTER_CHARS (lowered here) imports it."""
    path = tmp_path / "t.memory_timeline.json"
    path.write_text(json.dumps(timeline(20_000), separators=(",", ":")))
    child = (
        "import sys\n"
        "import profwin_memory.column_text as column_text\n"
        "from profwin_memory import summarize_timeline\n"
        "column_text.NUMPY_AFTER_CHARS = int(sys.argv[2])\n"
        "summarize_timeline(sys.argv[1])\n"
        "print('numpy' in sys.modules)\n"
    )
    said = [
        subprocess.run(
            [sys.executable, "-c", child, str(path), str(after)], capture_output=True, text=True, check=True, timeout=120
        ).stdout.strip()
        for after in (column_text.NUMPY_AFTER_CHARS, 1000)
    ]
    assert said == ["False", "True"]
