"""Every benchmark runs, in a tiny smoke size, so none can rot unnoticed (no timing is asserted:
the scripts print ratios for a person to read). The engine benchmarks run in their engines'
folders (integration_tests/vllm, integration_tests/sglang), next to the servers they need."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run_smoke(script: str, *args: str, python: str = sys.executable, env: dict[str, str] | None = None) -> str:
    """Run ``benchmarks/SCRIPT --smoke``; its output, after checking it exited 0."""
    done = subprocess.run(
        [python, str(BENCHMARKS / script), "--smoke", *args], capture_output=True, text=True, timeout=900, check=False, env=env
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def run_part(python: Path, part: str, *args: str, tag: str, env: dict[str, str]) -> Any:
    """Run the benchmark child ``benchmarks/parts/PART`` in an engine's environment and return
    the JSON of its one ``TAG `` result line (engines print their own tables to stdout too)."""
    done = subprocess.run(
        [str(python), str(BENCHMARKS / "parts" / part), *args], env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    lines = [x for x in done.stdout.splitlines() if x.startswith(f"{tag} ")]
    assert len(lines) == 1, done.stdout[-3000:]
    return json.loads(lines[0].removeprefix(f"{tag} "))


def test_every_benchmark_has_a_smoke_test() -> None:
    """Every script in benchmarks/ (benchmarks/parts/ holds the child processes a benchmark starts
    in an engine's environment; each is run on its engine by its own test)."""
    tests = "".join(p.read_text() for p in Path(__file__).parent.rglob("test_*.py"))
    for script in sorted(BENCHMARKS.glob("*.py")):
        assert f'"{script.name}"' in tests, f"benchmarks/{script.name} has no smoke test"
        assert "--smoke" in script.read_text(), f"benchmarks/{script.name} has no --smoke flag"


@pytest.mark.torch
def test_session_bench() -> None:
    out = run_smoke("session_bench.py")
    assert "profwin trace holds ProfilerStep#12..#16 (5 steps)" in out
    assert "profwin Session.step()" in out
    assert "markers: 30 steps, 30 in the parts, each once" in out
    assert "cost of a boundary beyond writing its steps" in out


@pytest.mark.torch
def test_memory_cpu_timeline() -> None:
    out = run_smoke("memory_cpu_timeline.py")
    assert "window 8:12 (4 steps)" in out
    assert "profwin events" in out


def test_memory_timeline_bench(tmp_path: Path) -> None:
    """A 2 MB timeline read by each contender, and both refusals at a 4 MiB limit."""
    out = run_smoke("memory_timeline_bench.py", "--dir", str(tmp_path))
    assert "| memory_timeline.json | " in out
    assert "| memory_timeline.json.gz | " in out
    assert "| whitespace flood | " in out
    assert "| column bomb | " in out
    assert "| zero-byte bomb | " in out


@pytest.mark.torch
def test_traces_bench(tmp_path: Path) -> None:
    """Every shape is generated from its template and every contender runs on it, once."""
    sys.path.insert(0, str(BENCHMARKS / "parts"))
    from trace_shapes import SHAPES

    out = run_smoke("traces_bench.py", "--dir", str(tmp_path))
    assert "| shape | MiB | summarize CPU s |" in out
    for name in SHAPES:
        assert f"\n| {name} | " in out, name
    assert "unavailable" not in out


def test_checked_cost_smoke() -> None:
    """The argument checker's per-call cost, new against the checker before issue 40 where git
    has it: one row per signature, each with the checker's own microseconds."""
    out = run_smoke("checked_cost.py")
    rows = [line for line in out.splitlines() if line.startswith(("backend(name)", "trace_files(8 paths)", "Options(4 fields)"))]
    assert len(rows) == 3, out
    assert "new µs" in out
    assert "import profwin " in out
