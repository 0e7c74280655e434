"""Every file format profwin writes and reads back carries its version (issue 41, class 6): one
key, ``"format": "NAME/VERSION"``; a file without it is version 1 and read as before; a newer or
foreign one is an error naming the versions this profwin reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profwin.errors import ConfigError
from profwin.formats import Format
from profwin.provenance import PROVENANCE_FORMAT, sidecar_path, write_sidecar

STATE = Format("profwin.example", version=3, oldest=2)


@pytest.mark.parametrize(
    ("data", "version", "error"),
    [
        ({"format": "profwin.example/3"}, 3, ""),
        ({"format": "profwin.example/2"}, 2, ""),
        ({}, None, "format: is profwin.example version 1, written by an older profwin; this one reads versions 2 to 3"),
        (
            {"format": "profwin.example/4"},
            None,
            "format: is profwin.example version 4, written by a newer profwin; this one reads versions 2 to 3: upgrade it (pip install -U profwin-core)",
        ),
        ({"format": "profwin.other/3"}, None, "format: is a profwin.other file, not a profwin.example file"),
        ({"format": 3}, None, "format: must be a format tag like 'profwin.example/3' (got 3)"),
        ({"format": "profwin.example/03"}, None, "format: must be a format tag"),
        ({"format": "x" * 5000}, None, "format: must be a format tag"),
    ],
)
def test_a_format_is_checked_by_name_and_version(data: dict[str, object], version: int | None, error: str) -> None:
    if version is not None:
        assert STATE.check(data) == version
        return
    with pytest.raises(ConfigError) as caught:
        STATE.check(data)
    assert str(caught.value).startswith(error)
    assert len(str(caught.value)) < 300


def test_stamp_puts_the_tag_first() -> None:
    assert list(STATE.stamp({"a": 1, "format": "old"})) == ["format", "a"]
    assert STATE.stamp({"a": 1})["format"] == "profwin.example/3"


def test_a_provenance_sidecar_carries_its_version(tmp_path: Path) -> None:
    """What core writes; profwin-traces reads it, and an older one (its tests)."""
    path = tmp_path / "t.json"
    write_sidecar(path, {"session": "S", "window": "0:1", "part": 1, "rank": 0})
    written = json.loads(sidecar_path(path).read_text())
    assert written == {"format": PROVENANCE_FORMAT.tag, "session": "S", "window": "0:1", "part": 1, "rank": 0}
    assert PROVENANCE_FORMAT.tag == "profwin.provenance/1"
    assert next(iter(written)) == "format"
