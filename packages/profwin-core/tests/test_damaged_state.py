"""State that is damaged reads as damaged, never as missing (issue 41, classes 5 and 6): ``profwin
stop`` names the file, says it is damaged (or of a version this profwin does not read) and where
the engine writes its trace; a state folder that is not one is said to be damaged; a state file
written before formats carried a version is still read. Against toyserve, the stand-in engine of
docs/plugins.md, on 127.0.0.1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from profwin.cli import main
from profwin.runtime.remote import STATE_FORMAT


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out)


def started(capsys: pytest.CaptureFixture[str], engine: Any) -> tuple[list[str], Path]:
    common = ["--engine", "toy", "--url", engine.url, "--window", "0:2", "--out", str(engine.trace_dir), "--json"]
    assert run(capsys, "start", *common)[0] == 0
    (state,) = (engine.trace_dir / ".profwin-state").iterdir()
    return common, state


def damage(state: Path, kind: str) -> None:
    data = json.loads(state.read_text())
    state.unlink()
    if kind == "garbage":
        state.write_bytes(b"\x00\x91garbage \xff" * 100)
    elif kind == "YAML-looking text":
        state.write_text("target: http://x\nplan: {}\n")
    elif kind == "600 MB":
        with open(state, "wb") as f:
            f.truncate(600 << 20)  # sparse
    elif kind == "link to /dev/zero":
        state.symlink_to("/dev/zero")
    elif kind == "100k deep":
        state.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "wrong shape":
        state.write_text(json.dumps([data]))
    elif kind == "newer version":
        state.write_text(json.dumps({**data, "format": "profwin.state/99"}))
    elif kind == "another format":
        state.write_text(json.dumps({**data, "format": "profwin.runtime.router-state/2"}))


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("garbage", "is not UTF-8 text"),
        ("YAML-looking text", "is not valid JSON"),
        ("600 MB", "is larger than 1,048,576 bytes"),
        ("link to /dev/zero", "it is a character device"),
        ("100k deep", "nested deeper than 100 levels"),
        ("wrong shape", "must be a JSON object (got a JSON list)"),
        ("newer version", "format: is profwin.state version 99, written by a newer profwin; this one reads versions 1 to 3"),
        ("another format", "format: is a profwin.runtime.router-state file, not a profwin.state file"),
    ],
)
def test_a_damaged_state_file_is_named_and_says_where_the_trace_is(
    toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str], kind: str, says: str
) -> None:
    common, state = started(capsys, engine)
    damage(state, kind)
    engine.generate(4)
    code, (result,) = run(capsys, "stop", *common)
    assert code == 1
    message = result["message"]
    assert message.startswith(f"the state file {state} is damaged or not profwin's ("), message
    assert says in message, message
    assert "no session started" not in message
    assert message.endswith(
        f"stopped its profiler, collected no files; the engine writes its trace in {engine.trace_dir} (look there for what it recorded)"
    )
    assert len(message) < 1000
    assert engine.session is None  # its profiler is stopped all the same


@pytest.mark.parametrize("kind", ["a file", "a link to a folder"])
def test_a_state_folder_that_is_not_one_is_damaged(
    toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    common, state = started(capsys, engine)
    folder = state.parent
    state.unlink()
    folder.rmdir()
    if kind == "a file":
        folder.write_text("not a folder")
    else:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        folder.symlink_to(elsewhere)
    code, (result,) = run(capsys, "stop", *common)
    assert code == 1
    what = "not a folder" if kind == "a file" else "a symbolic link"
    assert result["message"].startswith(f"the state folder {folder} is damaged (it is {what})"), result["message"]
    assert f"the engine writes its trace in {engine.trace_dir}" in result["message"]


def test_a_state_file_under_another_name_is_named(toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A state file for this engine that profwin does not look for (another version's name for it)."""
    common, state = started(capsys, engine)
    older = state.with_name(state.name.rsplit("-", 1)[0] + "-older.json")
    state.rename(older)
    code, (result,) = run(capsys, "stop", *common)
    assert code == 1
    assert result["message"].startswith(f"no state file {state.name} in {state.parent}, but it holds '{older.name}'"), result[
        "message"
    ]


def test_a_state_file_of_version_1_is_read(toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Written before formats carried a version (no ``"format"``): read as version 1, the same shape."""
    common, state = started(capsys, engine)
    data = json.loads(state.read_text())
    assert data.pop("format") == STATE_FORMAT.tag == "profwin.state/3"
    state.write_text(json.dumps(data))
    engine.generate(4)
    code, (result,) = run(capsys, "stop", *common)
    assert code == 0, result
    assert result["artifacts"][0]["steps"] == "0:2"
    assert not os.path.lexists(state)
