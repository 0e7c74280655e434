"""A long value or key in what a user types comes back as one readable line.

Every message that quotes a user's value goes through :func:`profwin.plugin.shown` (80 characters,
its full length noted), and a path built from a user's keys is cut the same way. Here, through
``profwin`` as a user runs it, with every plugin of the workspace installed: a 10,000-character
value or key at each place a spec file, a verl profiler block or a flag takes one. Before, 13 of
these 19 printed the whole value (10,000 to 20,000 characters on one line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from profwin.cli import main

LONG = "x" * 10_000
LINE = 400  # the longest line a message may print: the rule, the path and 80 characters of the value

VERL = {"_target_": "verl.utils.profiler.ProfilerConfig", "tool": "torch", "enable": True, "tool_config": {"torch": {}}}

# name -> (the spec document, its block (--at), the path the error names)
DOCUMENTS: dict[str, tuple[dict[str, Any], str | None, str]] = {
    "activities": ({"window": "1:2", "activities": LONG}, None, "activities"),
    "an activity": ({"window": "1:2", "activities": [LONG]}, None, "activities[0]"),
    "record": ({"window": "1:2", "record": LONG}, None, "record"),
    "a record": ({"window": "1:2", "record": [LONG]}, None, "record[0]"),
    "a key": ({"window": "1:2", LONG: 1}, None, "unknown key"),
    "a plugin's name": ({"window": "1:2", "options": {LONG: {}}}, None, "options.xxx"),
    "torch's format": ({"window": "1:2", "options": {"torch": {"format": LONG}}}, None, "options.torch.format"),
    "an npu level": ({"window": "1:2", "options": {"npu": {"level": LONG}}}, None, "options.npu.level"),
    "an npu export type": ({"window": "1:2", "options": {"npu": {"export_type": [LONG]}}}, None, "options.npu.export_type"),
    "sglang's start": ({"window": "1:2", "options": {"sglang": {"start": LONG}}}, None, "options.sglang.start"),
    "a verl tool": ({"profiler": {**VERL, "tool": LONG}}, "profiler", "profiler"),
    "verl's contents": (
        {"profiler": {**VERL, "tool_config": {"torch": {"contents": [LONG]}}}},
        "profiler",
        "profiler.tool_config.torch.contents[0]",
    ),
    "verl's ranks": ({"profiler": {**VERL, "ranks": [LONG]}}, "profiler", "profiler.ranks[0]"),
    "verl's save_path": ({"profiler": {**VERL, "save_path": [LONG]}}, "profiler", "profiler.save_path"),
}


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_a_long_value_in_a_spec_file(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document, at, path = DOCUMENTS[name]
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(document))
    assert main(["validate", str(spec_file), *(["--at", at] if at else [])]) == 1
    out = capsys.readouterr()
    lines = _lines(out.err)
    assert any(path in line for line in lines), lines
    assert max(map(len, lines)) <= LINE, max(lines, key=len)[:300]
    assert "10,0" in out.err  # the value's length is said, as shown() says it


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "SPEC", "--at", LONG],
        ["args", "vllm", "--engine-version", f"sglang={LONG}"],
        ["args", "vllm", "--window", LONG],
        ["args", "vllm", "--prefix", LONG],
        ["args", LONG],
    ],
    ids=["--at", "--engine-version", "--window", "--prefix", "an engine"],
)
def test_a_long_flag(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text('{"window": "1:2"}')
    code = main([str(spec_file) if a == "SPEC" else a for a in argv])
    assert code in (1, 2)
    lines = _lines(capsys.readouterr().err)
    assert lines
    assert max(map(len, lines)) <= LINE, max(lines, key=len)[:300]
