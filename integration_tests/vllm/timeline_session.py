"""Session timelines on a real in-process vLLM, with the engine's own record of every step.

Run by test_timeline.py with the engine environment's python, profwin on PYTHONPATH and a folder
on it that registers profwin-vllm's ``vllm.general_plugins`` entry point (what ``pip install
profwin-vllm`` registers): ``python timeline_session.py <model-dir> <trace-dir> <result.json>
[cost]``.

For each scenario (a batch that staggers: chunked prefill, more requests than ``max_num_seqs``,
prompts of different lengths, requests that finish early) it opens a ``profwin_vllm.session``
whose spec says ``record: [timeline]`` (a token window, or a step window vLLM records itself),
generates the batch, and reports:

* ``record``: vLLM's own account of each step of the session, taken from its scheduler
  (``Scheduler.update_from_output``, step_record.py): the step annotation vLLM writes for it
  (``vllm.v1.utils.compute_iteration_details``) and how many tokens the model runner sampled for
  each request it scheduled. Nothing of profwin's computes it;
* ``timeline``: the session timeline files profwin collected, read with ``json.load``, their
  provenance sidecars, and the trace's (session id, steps);
* what ``generate`` returned (each output's length and finish reason), the artifacts and warnings.

With ``cost``, it instead measures the per-step cost of the timeline (benchmarks/timeline_cost.py
runs it): one engine, the same batch generated with the timeline off and on in alternation, each
session's steps timed by vLLM's own record.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from step_record import StepRecord, trace_names
from tiny_llm import tiny_llm  # sets vLLM's environment before vLLM is imported

from profwin import ProfileSpec, Window

# (name, engine, [(prompt length, max tokens, n), ...], window)
ENGINES = {"A": {"max_num_batched_tokens": 64, "max_num_seqs": 8}, "B": {"max_num_batched_tokens": 64, "max_num_seqs": 4}}
SCENARIOS: list[tuple[str, str, list[tuple[int, int, int]], str]] = [
    ("chunked-prefill", "A", [(47, 24, 1)] * 8, "4:12 tokens"),
    ("lengths-and-early-finish", "A", [(5 + 7 * i, (3, 20, 6, 14, 9, 24, 4, 11)[i], 1) for i in range(8)], "3:9"),
    ("admission", "B", [(30, 12, 1)] * 10, "2:8 tokens"),
    ("n-samples", "A", [(20 + 9 * i, 10, 3) for i in range(3)], "1:6"),
]


def _prompts(batch: list[tuple[int, int, int]]) -> tuple[list[Any], list[Any]]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    prompts, params = [], []
    for i, (length, max_tokens, n) in enumerate(batch):
        prompts.append(TokensPrompt(prompt_token_ids=[5 + (7 * i + j) % 1000 for j in range(length)]))
        params.append(SamplingParams(max_tokens=max_tokens, n=n, ignore_eos=True, temperature=0.0 if n == 1 else 1.0))
    return prompts, params


def _read(path: Path) -> Any:
    return json.loads(path.read_text())


def main(model: str, trace_dir: Path, result_path: Path) -> None:
    began = time.monotonic()
    import profwin_vllm

    record = StepRecord()
    report: dict[str, Any] = {"scenarios": {}}
    engines: dict[str, Any] = {}
    for name, engine, batch, window in SCENARIOS:
        spec = ProfileSpec(window=Window.parse(window), output_dir=trace_dir, prefix=name, timeline=True)
        if engine not in engines:
            config = profwin_vllm.VllmBackend().plan(ProfileSpec(output_dir=trace_dir, prefix="launch")).launch
            engines[engine] = tiny_llm(model, config["profiler_config"], **ENGINES[engine])
        llm = engines[engine]
        prompts, params = _prompts(batch)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with profwin_vllm.session(llm, spec) as session:
                record.steps = []
                outputs = llm.generate(prompts, params, use_tqdm=False)
            steps, record.steps = record.steps, None
        timelines = [a for a in session.artifacts if a.kind == "timeline"]
        traces = [a for a in session.artifacts if a.kind == "trace"]
        report["scenarios"][name] = {
            "window": window,
            "plan": {k: session.results[0].details.get(k) for k in ("mechanism", "window", "records", "notes", "timeline")},
            "record": steps,
            "outputs": sorted((len(c.token_ids), c.finish_reason) for o in outputs for c in o.outputs),
            "artifacts": [a.to_dict() for a in session.artifacts],
            "timelines": [_read(Path(a.path)) for a in timelines],
            "timeline_sidecars": [_read(Path(str(a.path) + ".profwin.json")) for a in timelines],
            "trace_sidecars": [_read(Path(str(a.path) + ".profwin.json")) for a in traces],
            "trace": {Path(a.path).name: trace_names(Path(a.path)) for a in traces},
            "warnings": [str(w.message) for w in caught],
        }
    report["version"] = str(profwin_vllm.resolve_version(None)[0])
    report["seconds"] = round(time.monotonic() - began, 1)
    result_path.write_text(json.dumps(report, indent=1))


def cost(model: str, trace_dir: Path, result_path: Path, rounds: int = 6) -> None:
    """The timeline's per-step cost: one engine (engine A), one batch, sessions with the timeline
    off and on in alternation (a step window that records nothing: ``100000:100001``); each step's
    time is the worker's ``execute_model`` call as the engine plugin's hook measures it... without
    the hook when off, so both are timed here around vLLM's own ``Scheduler.update_from_output``
    calls (one per step, step_record.py's hook), as wall time between consecutive steps."""
    import profwin_vllm

    record = StepRecord()
    config = profwin_vllm.VllmBackend().plan(ProfileSpec(output_dir=trace_dir, prefix="launch")).launch
    llm = tiny_llm(model, config["profiler_config"], **ENGINES["A"])
    prompts, params = _prompts([(20, 64, 1)] * 8)
    llm.generate(prompts, params, use_tqdm=False)  # warm-up
    found: dict[str, list[float]] = {"off": [], "on": []}
    sizes: list[tuple[int, int]] = []
    for k in range(2 * rounds):
        mode = "on" if k % 2 else "off"
        spec = ProfileSpec(window=Window(100000, 100001), output_dir=trace_dir, prefix=f"cost{k}", timeline=mode == "on")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with profwin_vllm.session(llm, spec) as session:
                record.steps = []
                t0 = time.perf_counter()
                llm.generate(prompts, params, use_tqdm=False)
                took = time.perf_counter() - t0
            steps, record.steps = record.steps, None
        found[mode].append(took / max(len(steps), 1) * 1e6)
        for a in session.artifacts:
            if a.kind == "timeline":
                sizes.append((a.bytes, len(steps)))
    result_path.write_text(json.dumps({"us_per_step": found, "timeline_bytes_steps": sizes, "version": "0.32.0"}))


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[4] == "cost":
        cost(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
