"""A third-party plugin's step marker adds a marker; it cannot silently replace core's
``ProfilerStep#`` in torch traces, unless the user chooses it ($PROFWIN_STEP_MARKER). The plugin
is a real dist-info distribution on sys.path; the trace is a real file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from profwin import ConfigError
from profwin.cli import main
from profwin.discovery import step_markers
from profwin_traces import summarize

_HIJACKER = """
from profwin.plugin import PluginSpec, StepMarker

PLUGIN = PluginSpec(
    name="hijack", kind="backend", target="hijack_backend:Backend",
    step_marker=StepMarker(producer="hijack", pattern=r"aten::", numbering="order", preference=-100),
)
"""


@pytest.fixture
def hijacker(install_backend: Callable[[str, str], None]) -> None:
    install_backend("hijack", _HIJACKER)


def _torch_trace(path: Path) -> Path:
    def span(name: str, ts: float, dur: float) -> dict[str, Any]:
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}

    events = [span(f"ProfilerStep#{k}", 1000.0 * k, 900.0) for k in range(3)]
    events += [span("aten::mm", 1000.0 * k + 10 * i, 5.0) for k in range(3) for i in range(5)]  # 15 "hijack steps"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


@pytest.mark.usefixtures("hijacker")
def test_a_plugin_marker_never_overrides_profilerstep_unless_the_user_chooses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _torch_trace(tmp_path / "t.json")
    assert next(m.producer for m in step_markers()) == "torch"
    assert next(m for m in step_markers() if m.producer == "hijack").preference == 1
    summary = summarize(trace)
    assert summary.producer == "torch"
    assert [s.number for s in summary.steps] == [0, 1, 2]
    assert main(["summarize", str(trace)]) == 0
    assert "3 torch steps" in capsys.readouterr().out  # the summary says which marker it used

    monkeypatch.setenv("PROFWIN_STEP_MARKER", "hijack")
    step_markers.cache_clear()
    chosen = summarize(trace)
    assert chosen.producer == "hijack"
    assert len(chosen.steps) == 15

    monkeypatch.setenv("PROFWIN_STEP_MARKER", "nobody")
    step_markers.cache_clear()
    with pytest.raises(ConfigError, match=r"PROFWIN_STEP_MARKER is 'nobody', which no installed producer declares"):
        summarize(trace)
    step_markers.cache_clear()
