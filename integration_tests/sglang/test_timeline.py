"""Session timelines on a real SGLang 0.5.23 server, judged against SGLang's own record of each batch.

The server runs profwin-sglang's server plugin, chunked prefill of 64 tokens and at most 4
running requests, with and without ``--enable-mixed-chunk``; batches that stagger (long prompts
chunked, more requests than may run, prompts of different lengths, ``n = 3`` samples, early
finishes) are generated while a session with ``record: [timeline]`` is open (a token window, or a
step window SGLang's own profiler records). batch_record.py, a test-harness plugin in the same
server, writes SGLang's own account of every batch: its ``output_ids`` counts and ``extend_lens``
after the batch, and the scheduler's waiting queue and running batch before it. Every number of
the timeline, per step and per request, must equal what that record gives.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, Window
from profwin_traces.provenance import read_sidecar

from ..token_rule import produced_by_step
from .conftest import Server
from .test_token_windows import _generate, _recorded, _recorded_session

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

# name -> (window, [(prompt words, max new tokens, n), ...])
SCENARIOS: dict[str, tuple[str, list[tuple[int, int, int]]]] = {
    "chunked-prefill": ("3:9 tokens", [(45, 14, 1)] * 4),
    "lengths-and-early-finish": ("2:7", [(6 + 9 * i, (3, 12, 5, 9, 7, 4)[i], 1) for i in range(6)]),
    "admission": ("2:6 tokens", [(12, 9, 1)] * 9),
    "n-samples": ("1:5 tokens", [(20, 8, 3), (33, 8, 3)]),
}
MODES = {"stock-chunking": (), "mixed-chunk": ("--enable-mixed-chunk",)}


@pytest.fixture(scope="module", params=sorted(MODES))
def recorded_server(
    request: pytest.FixtureRequest, tiny_model: Path, plugin_site: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """A server with profwin's plugin and SGLang's batch record (and queues), in one of :data:`MODES`."""
    mode = ("--max-running-requests", "4", *MODES[request.param])
    yield from _recorded(f"timeline-{request.param}", mode, {}, tiny_model, plugin_site, tmp_path_factory, queues=True)


def _queues(path: Path, after: int) -> dict[int, tuple[int, int]]:
    found = {}
    for line in path.read_text().splitlines():
        ct, waiting, running = (int(v) for v in line.split())
        if ct > after:
            found[ct] = (waiting, running)
    return found


def _run(server: Server, name: str, tmp_path: Path) -> dict[str, Any]:
    window, batch = SCENARIOS[name]
    spec = ProfileSpec(window=Window.parse(window), output_dir=tmp_path, activities=("cpu",), prefix=name, timeline=True)
    result = _recorded_session(server, spec, lambda: _generate(server, batch, seed=len(name)))
    result["queues"] = _queues(Path(str(server.workdir / "queues.txt")), result["before"])
    return result


def _rows(timeline: dict[str, Any], key: str) -> list[dict[str, Any]]:
    fields = timeline["step_fields" if key == "step_rows" else "request_fields"]
    return [dict(zip(fields, row, strict=True)) for row in timeline[key]]


def _expected(result: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, tuple[int, int | None, int | None, int]]]:
    """Each step's and each request's numbers as SGLang's own record gives them."""
    record, queues = result["record"], result["queues"]
    made = produced_by_step([counts for _, _, counts, _ in record])
    steps = []
    requests: dict[str, list[Any]] = {}
    totals: dict[str, int] = {}
    for k, ((ct, _, counts, prefilled), indices) in enumerate(zip(record, made, strict=True)):
        ordered = sorted(indices)
        waiting, running = queues[ct]
        steps.append(
            {
                "step": k, "counter": ct, "batch": len(counts), "prefilling": len(prefilled),
                "prefill_tokens": sum(prefilled.values()), "decoding": len(counts) - len(prefilled),
                "produced": len(indices), "token_median": ordered[(len(ordered) - 1) // 2] if ordered else None,
                "token_min": ordered[0] if ordered else None, "token_max": ordered[-1] if ordered else None,
                "running": running, "waiting": waiting,
            }
        )  # fmt: skip
        for rid, count in counts.items():
            entry = requests.setdefault(rid, [k, None, None, 0])
            if count > totals.get(rid, 0):
                if totals.get(rid, 0) == 0:
                    entry[1] = k
                entry[2], entry[3] = k, count
                totals[rid] = count
    return steps, {rid: (a, f, last, n) for rid, (a, f, last, n) in requests.items()}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_timeline_is_sglangs_own_record(recorded_server: Server, tmp_path: Path, name: str) -> None:
    result = _run(recorded_server, name, tmp_path)
    s = result["session"]
    (outcome,) = s.results
    assert outcome.ok, outcome
    assert outcome.details["timeline"] is True
    assert result["warnings"] == [], result["warnings"]
    record = result["record"]
    assert [ct for ct, *_ in record] == list(range(result["before"] + 1, result["before"] + 1 + len(record)))
    (artifact,) = [a for a in s.artifacts if a.kind == "timeline"]
    timeline = json.loads(artifact.path.read_text())
    assert (timeline["format"], timeline["version"], timeline["engine"], timeline["rank"]) == ("profwin.timeline", 1, "sglang", 0)
    steps, requests = _expected(result)
    rows = _rows(timeline, "step_rows")
    assert len(rows) == len(record) > 5
    fields = list(steps[0])
    assert [{f: r[f] for f in fields} for r in rows] == steps
    assert all(r["dur_us"] >= 0 for r in rows)
    assert all(a["start_us"] <= b["start_us"] for a, b in itertools.pairwise(rows))
    found = {r["id"]: r for r in _rows(timeline, "request_rows")}
    assert {rid: (r["admitted"], r["first_token"], r["last_token"], r["output"]) for rid, r in found.items()} == requests
    # max_new_tokens reached (ignore_eos) for every request: SGLang's FINISH_LENGTH, said "length".
    assert {r["finish"] for r in found.values()} == {"length"}
    # n = 3: SGLang first runs each prompt once on its own (one token, caching the prefix), then
    # the 3 samples; its record and the timeline hold those requests alike (compared above).
    extra = [1, 1] if name == "n-samples" else []
    assert sorted(r["output"] for r in found.values()) == extra + result["generated"]
    # The trace and the timeline: one session id; the timeline says where the window's steps sit.
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    assert read_sidecar(artifact.path)["session"] == read_sidecar(trace.path)["session"]
    assert timeline["window_steps"] == str(trace.steps)
    assert timeline["window"] == SCENARIOS[name][0]
    mode = "mixed-chunk" if "--enable-mixed-chunk" in recorded_server.extra_args else "stock-chunking"
    print(f"{mode} {name}: {len(rows)} steps and {len(found)} requests equal SGLang's record; window at steps {trace.steps}")
    if name == "admission":  # more requests than may run: some wait, then start after others finish
        assert max(r["waiting"] for r in rows) >= 5
        assert max(a for a, *_ in requests.values()) - min(a for a, *_ in requests.values()) >= 9
    if name == "lengths-and-early-finish":
        assert result["generated"] == [3, 4, 5, 7, 9, 12]
    if name == "chunked-prefill":  # a prompt of 45 words in chunks of 64 tokens: prefills that share a batch
        assert any(r["prefilling"] >= 2 for r in rows)


def test_timeline_cost_benchmark(recorded_server: Server) -> None:
    """benchmarks/timeline_cost.py runs (smoke size) against this live server with the plugin."""
    from ..test_benchmarks import run_smoke

    out = run_smoke("timeline_cost.py", "--sglang-url", recorded_server.url, "--api-key", str(recorded_server.api_key))
    assert "| SGLang 0.5.23 (" in out
    assert "timeline bytes per 1,000 steps: sglang " in out
