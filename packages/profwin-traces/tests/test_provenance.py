"""A trace's provenance as the tools read it (profwin_traces.provenance): the sidecar core writes
and the ``"profwin"`` key, their format's version checked (issue 41, class 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profwin.provenance import PROVENANCE_FORMAT, sidecar_path, write_sidecar
from profwin_traces import TraceError, join_parts, trace_facts
from profwin_traces.provenance import read_sidecar, sidecar_info


def trace(path: Path) -> Path:
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0.0, "dur": 1.0}]
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_a_provenance_sidecar_is_read_and_an_older_one_too(tmp_path: Path) -> None:
    path = trace(tmp_path / "t.json")
    write_sidecar(path, {"session": "S", "window": "0:1", "part": 1, "rank": 0})
    written = json.loads(sidecar_path(path).read_text())
    assert written["format"] == PROVENANCE_FORMAT.tag == "profwin.provenance/1"
    assert read_sidecar(path) == {"session": "S", "window": "0:1", "part": 1, "rank": 0}
    del written["format"]  # written before formats carried a version
    sidecar_path(path).write_text(json.dumps(written))
    assert read_sidecar(path) == {"session": "S", "window": "0:1", "part": 1, "rank": 0}
    assert trace_facts(path).problem is None


@pytest.mark.parametrize("where", ["sidecar", "inside"])
def test_a_provenance_of_a_newer_version_is_said_so(tmp_path: Path, where: str) -> None:
    path = tmp_path / "t.json"
    origin = {"format": "profwin.provenance/7", "session": "S", "window": "0:1", "part": 1, "rank": 0}
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0.0, "dur": 1.0}]
    if where == "sidecar":
        path.write_text(json.dumps({"traceEvents": events}))
        sidecar_path(path).write_text(json.dumps(origin))
        assert "is profwin.provenance version 7, written by a newer profwin" in sidecar_info(path)[1]
    else:
        path.write_text(json.dumps({"profwin": origin, "traceEvents": events}))
    problem = trace_facts(path).problem
    assert problem is not None
    assert "version 7, written by a newer profwin; this one reads versions 1" in problem
    with pytest.raises(TraceError, match="version 7"):
        join_parts([trace_facts(path)])
