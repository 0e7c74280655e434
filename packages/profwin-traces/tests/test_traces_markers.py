"""The step-marker registry: core's torch marker plus the markers plugins declare in their
PluginSpec, found through entry points; a new engine's marker needs no edit in core."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from profwin.cli import main
from profwin.plugin import StepMarker
from profwin_traces import TORCH_MARKER, TraceError, count_steps, step_markers, summarize


def trace(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def span(name: str, ts: float, dur: float = 10.0, cat: str = "user_annotation", pid: int = 1) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": 1, "ts": ts, "dur": dur}


def test_registry_holds_core_and_installed_plugins() -> None:
    markers = {m.producer: m for m in step_markers()}
    assert markers["torch"] is TORCH_MARKER
    assert markers["vllm"].pattern == r"execute_(?:\d+_)?context_"
    assert markers["sglang"].pattern == r"step\[[A-Z_]+\b"
    assert [m.producer for m in step_markers()][:3] == ["torch", "vllm", "sglang"]


def test_vllm_detailed_annotations_are_steps(tmp_path: Path) -> None:
    """``detailed_trace_annotation`` names steps ``execute_<tokens>_context_…``; the GPU copy
    of the annotation (category gpu_user_annotation) is not a step."""
    names = ["execute_12_context_1(12)_generation_0(0)", "execute_1_context_0(0)_generation_1(1)(sq1sk13)"]
    events = [span(n, 100.0 * i) for i, n in enumerate(names)] + [span(names[0], 5.0, cat="gpu_user_annotation")]
    path = trace(tmp_path / "detailed.json", events)
    summary = summarize(path)
    assert summary.producer == "vllm"
    assert [s.label for s in summary.steps] == names
    assert count_steps(path) == 2


def test_preference_torch_over_vllm_over_sglang(tmp_path: Path) -> None:
    events = [span("step[DECODE bs=1 toks=1]", 0.0), span("execute_context_0(0)_generation_1(1)", 20.0)]
    assert summarize(trace(tmp_path / "a.json", events)).producer == "vllm"
    events.append(span("ProfilerStep#7", 0.0, 100.0))
    assert summarize(trace(tmp_path / "b.json", events)).producer == "torch"
    assert count_steps(tmp_path / "b.json") == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pattern": "step(", "numbering": "order"}, "step_marker.pattern: 'step(' is not a regular expression"),
        ({"pattern": "step#", "numbering": "number"}, "numbers steps but has no group for the number"),
        ({"pattern": "s", "numbering": "count"}, "numbering: must be 'number' or 'order'"),
        ({"pattern": "s", "numbering": "order", "producer": ""}, "Length of 'producer' must be >= 1"),
    ],
)
def test_step_marker_is_validated(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        StepMarker(**{"producer": "x", **kwargs})


_PLUGIN_MODULE = """
from profwin.plugin import PluginSpec, StepMarker

PLUGIN = PluginSpec(
    name="toyengine", kind="backend", target="toyengine_backend:Backend",
    step_marker=StepMarker(producer="toyengine", pattern=r"engine_iteration_", numbering="order", preference=15),
)
"""


@pytest.fixture
def toy_engine(install_backend: Callable[[str, str], None]) -> None:
    """A third engine's distribution, installed the way pip would leave it, without touching core."""
    install_backend("toyengine", _PLUGIN_MODULE)


@pytest.mark.usefixtures("toy_engine")
def test_a_new_engine_declares_its_marker_without_editing_core(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    marker = next(m for m in step_markers() if m.producer == "toyengine")
    assert [m.producer for m in step_markers()][:4] == ["torch", "vllm", "toyengine", "sglang"]
    events = [span(f"engine_iteration_{i}", 50.0 * i, 40.0, pid=p) for p in (1, 2) for i in range(3)]
    path = trace(tmp_path / "toy.json", events)
    summary = summarize(path, first_step=10)
    assert summary.producer == marker.producer
    assert [s.number for s in summary.steps] == [10, 11, 12]
    assert main(["plugins", "--json"]) == 0
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert listed["toyengine"]["status"] == "ok"


def test_explicit_markers_need_no_registry(tmp_path: Path) -> None:
    """A backend names its marker itself (its engine process may lack the entry points)."""
    mine = StepMarker(producer="unregistered", pattern=r"iteration_", numbering="order")
    path = trace(tmp_path / "it.json", [span(f"iteration_{i}", 20.0 * i) for i in range(4)])
    assert all(m.producer != "unregistered" for m in step_markers())
    assert summarize(path, markers=(mine,)).producer == "unregistered"
    assert count_steps(path, markers=(mine,)) == 4
    assert count_steps(path) == 0
    with pytest.raises(TraceError) as info:
        summarize(path, markers=(TORCH_MARKER,))
    # The pattern as written (no doubled backslashes), only the markers looked for, and why.
    assert "(looked for host-side complete events whose name matches, torch: ProfilerStep#(\\d+)$)" in info.value.reason
    assert "\\\\" not in info.value.reason
    assert "prof.step()" in info.value.reason
