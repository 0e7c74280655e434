"""Token windows on a real in-process vLLM, with the engine's own record of every step.

Run by test_token_windows.py with the engine environment's python, profwin on PYTHONPATH and a
folder on it that registers profwin-vllm's ``vllm.general_plugins`` entry point (what ``pip
install profwin-vllm`` registers): ``python token_windows.py <model-dir> <trace-dir> <result.json>
[per-session|launch]``. ``launch`` (vLLM 0.27, which takes the window only at launch) builds one
engine per scenario with profwin's launch config for that scenario's token window, and starts
each session without bounds.

For each scenario (a batch that staggers: chunked prefill, more requests than ``max_num_seqs``,
prompts of different lengths, ``n > 1``, requests that finish early) it opens a
``profwin_vllm.session`` with a token window, generates the batch, and reports what follows; for
each of :data:`MIDFLIGHT` it opens the session while requests already decode (the engine stepped
by hand), and reports the same and ``first``, the record's row of the session's step 0:

* ``record``: the engine's own account of each step of the session, taken from vLLM's scheduler
  (``Scheduler.update_from_output``, step_record.py): the step annotation vLLM writes for it
  (``vllm.v1.utils.compute_iteration_details``, the same words as in its trace) and, for every
  request, how many tokens the model runner sampled for it in that step. Nothing of profwin's
  computes it;
* ``trace``: the step annotations and profwin's token annotations of each trace, in time order
  (read with ``json.load``), the artifacts profwin reported, and the warnings.

The test derives the expected steps from ``record`` alone and compares.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from runner_v2 import replay
from step_record import StepRecord, trace_names
from tiny_llm import tiny_llm  # sets vLLM's environment before vLLM is imported

from profwin import ProfileSpec, Window

PREEMPTED = [(30 + 5 * i, 40, 1) for i in range(6)]
"""Six requests that outgrow engine C's KV cache (``preemption``, and :mod:`runner_v2`)."""
# (name, engine, [(prompt length, max tokens, n), ...], window)
ENGINES = {
    "A": {"max_num_batched_tokens": 64, "max_num_seqs": 8},
    "B": {"max_num_batched_tokens": 64, "max_num_seqs": 4},
    # A KV cache of 8 blocks of 32 tokens (the CPU attention's block) for 6 requests that grow to
    # 70..95 tokens: vLLM preempts some and recomputes them later (prompt and outputs so far).
    "C": {"max_num_batched_tokens": 64, "max_num_seqs": 8, "num_gpu_blocks_override": 8, "block_size": 32},
}
SCENARIOS: list[tuple[str, str, list[tuple[int, int, int]], str]] = [
    ("chunked-prefill", "A", [(47, 24, 1)] * 8, "4:12 tokens"),
    ("lengths-and-early-finish", "A", [(5 + 7 * i, (3, 20, 6, 14, 9, 24, 4, 11)[i], 1) for i in range(8)], "3:9 tokens"),
    ("n-samples", "A", [(20 + 9 * i, 10, 3) for i in range(3)], "1:6 tokens"),
    ("open-ended", "A", [(30, 9, 1)] * 4 + [(60, 14, 1)] * 2, "6: tokens"),
    ("never-reached", "A", [(12, 4, 1)] * 2, "20:30 tokens"),
    ("admission", "B", [(30, 12, 1)] * 10, "2:8 tokens"),
    # Token 0 in the window, the long prompt's last chunk sharing a step with the short one's
    # prefill (chunks of 64 tokens; the tiny model's context is 128), as SGLang's "from-token-0".
    ("from-token-0", "A", [(110, 6, 1), (45, 6, 1)], "0:3 tokens"),
    # 7 requests of 40..94 prompt tokens, at most 4 running: 3 are admitted (and prefilled) while
    # the first ones decode tokens 12..19, as SGLang's "admission-mid-window".
    ("admission-mid-window", "B", [(40 + 9 * i, 16 + (i % 3) * 4, 1) for i in range(7)], "12:20 tokens"),
    # Requests preempted while they decode produce their next token at the end of their
    # recomputation: counted from their outputs so far (docs/backends/vllm.md). Tokens 30..39:
    # two requests are preempted and recomputed while the window is open.
    ("preemption", "C", PREEMPTED, "30:40 tokens"),
]


LAUNCH_SCENARIOS = ("chunked-prefill", "admission")

# Sessions opened while requests decode (a live engine under traffic): the engine is stepped by
# hand (``LLMEngine.add_request``/``step``), so the session starts between two known steps.
# (name, engine, batch decoding when the session starts, steps run before it, (session step at
# which more requests arrive, their batch), window)
MIDFLIGHT: list[tuple[str, str, list[tuple[int, int, int]], int, tuple[int, list[tuple[int, int, int]]], str]] = [
    # The requests are past token 9 when the session starts: the window opens at their token 14,
    # a few steps in; two requests are admitted while it is open.
    ("decoding-at-start", "A", [(30, 40, 1)] * 3, 12, (6, [(30, 20, 1)] * 2), "14:20 tokens"),
    # The requests are already inside the window when the session starts: it opens at step 0.
    ("inside-the-window-at-start", "A", [(30, 40, 1)] * 3, 12, (2, [(30, 20, 1)]), "5:14 tokens"),
]


def main(model: str, trace_dir: Path, result_path: Path, mode: str) -> None:
    began = time.monotonic()
    import profwin_vllm

    record = StepRecord()
    report: dict[str, Any] = {"scenarios": {}}
    engines: dict[str, Any] = {}
    for name, engine, batch, window in SCENARIOS:
        spec = ProfileSpec(window=Window.parse(window), output_dir=trace_dir, prefix=name)
        if mode == "launch":
            if name not in LAUNCH_SCENARIOS:
                continue
            # What `profwin args vllm --window '...'` prints for this vLLM: the window is in the config.
            config = profwin_vllm.VllmBackend().plan(spec).launch
            llm = tiny_llm(model, config["profiler_config"], **ENGINES[engine])
        else:
            if engine not in engines:
                config = profwin_vllm.VllmBackend().plan(ProfileSpec(output_dir=trace_dir, prefix="launch")).launch
                engines[engine] = tiny_llm(model, config["profiler_config"], **ENGINES[engine])
            llm = engines[engine]
        requests = _requests(batch, name)
        prompts, params = [prompt for _, prompt, _ in requests], [p for _, _, p in requests]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with profwin_vllm.session(llm, spec) as session:
                record.steps = []
                outputs = llm.generate(prompts, params, use_tqdm=False)
            steps, record.steps = record.steps, None
        report["scenarios"][name] = {
            "window": window,
            "plan": {k: session.results[0].details.get(k) for k in ("mechanism", "window", "records", "notes")},
            "record": steps,
            "generated": sorted(len(c.token_ids) for o in outputs for c in o.outputs),
            "artifacts": [a.to_dict() for a in session.artifacts],
            "trace": {Path(a.path).name: trace_names(Path(a.path)) for a in session.artifacts if a.kind == "trace"},
            "warnings": [str(w.message) for w in caught],
        }
    if mode != "launch":
        for name, engine, batch, before, (at, later), window in MIDFLIGHT:
            report["scenarios"][name] = _midflight(engines[engine], record, name, batch, before, at, later, window, trace_dir)
        # Model Runner V2's steps, on schedulers made from engine C's config (runner_v2.py).
        report["runner_v2"] = {
            how: replay(engines["C"], _requests(PREEMPTED, f"runner-v2-{how}"), "10:30 tokens", asynchronous=how == "async")
            for how in ("sync", "async")
        }
    report["version"] = str(profwin_vllm.resolve_version(None)[0])
    report["seconds"] = round(time.monotonic() - began, 1)
    result_path.write_text(json.dumps(report, indent=1))


def _requests(batch: list[tuple[int, int, int]], tag: str) -> list[tuple[str, Any, Any]]:
    """``batch``'s requests: (request id, prompt, sampling parameters), the same prompts for the
    same scenario every run."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    return [
        (
            f"{tag}-{i}",
            TokensPrompt(prompt_token_ids=[5 + (7 * i + j) % 1000 for j in range(length)]),
            SamplingParams(max_tokens=max_tokens, n=n, ignore_eos=True, temperature=0.0 if n == 1 else 1.0),
        )
        for i, (length, max_tokens, n) in enumerate(batch)
    ]


def _midflight(
    llm: Any,
    record: StepRecord,
    name: str,
    batch: list[tuple[int, int, int]],
    before: int,
    at: int,
    later: list[tuple[int, int, int]],
    window: str,
    trace_dir: Path,
) -> dict[str, Any]:
    """``batch`` decodes for ``before`` steps, then a session opens; ``later`` arrives at its step
    ``at``. The record holds every step from the first; ``first`` is the session's step 0."""
    import profwin_vllm

    engine = llm.llm_engine
    spec = ProfileSpec(window=Window.parse(window), output_dir=trace_dir, prefix=name)
    record.steps = []
    for request in _requests(batch, f"{name}-a"):
        engine.add_request(*request)
    for _ in range(before):
        engine.step()
    first = len(record.steps)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with profwin_vllm.session(llm, spec) as session:
            step = 0
            while engine.has_unfinished_requests():
                if step == at:
                    for request in _requests(later, f"{name}-b"):
                        engine.add_request(*request)
                engine.step()
                step += 1
    steps, record.steps = record.steps, None
    return {
        "window": window,
        "first": first,
        "plan": {k: session.results[0].details.get(k) for k in ("mechanism", "window", "records", "notes")},
        "record": steps,
        "artifacts": [a.to_dict() for a in session.artifacts],
        "trace": {Path(a.path).name: trace_names(Path(a.path)) for a in session.artifacts if a.kind == "trace"},
        "warnings": [str(w.message) for w in caught],
    }


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "per-session")
