"""Profile several windows of one in-process vLLM engine and report what each trace holds.

Run by test_offline.py with the engine environment's python and profwin on PYTHONPATH:
``python offline_windows.py <model-dir> <trace-dir> <result.json>``. One engine serves every
session (vLLM >= 0.32 takes the window per session), with one prompt per generate call so the
step numbering is deterministic: step 0 is the prefill, then one decode step per token.

The engine is launched with profwin's launch config for window 2:5; the first session uses it as
vLLM 0.13-0.31 would (no per-session bounds), the others override it per session.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import traceback
import warnings
from pathlib import Path

from tiny_llm import step_names, tiny_llm  # sets vLLM's environment before vLLM is imported

from profwin import ProfileSpec, Window
from profwin_traces import count_steps
from profwin_vllm._plugin import STEP_MARKER

MAX_TOKENS = 8
PROMPT = [5, 6, 7, 8, 9, 10]
# (name, window, version profwin plans for); None = the installed one.
SESSIONS = [
    ("launch", "2:5", "0.31.0"),
    ("w0-3", "0:3", None),
    ("w2-5", "2:5", None),
    ("w1-3", "1:3", None),
    ("w5-end", "5:", None),
    ("w0-1000", "0:1000", None),
    ("unreached", "20:25", None),
    # No profwin-vllm engine plugin in this engine (no entry point registered): a token window is
    # recorded as the same steps, with a warning, and the engine keeps serving.
    ("tokens-no-plugin", "2:5 tokens", None),
]
# Raw vLLM bounds, to derive the off-by-one: (name, delay_iterations, max_iterations).
RAW = [("raw-d0", 0, 0), ("raw-d1", 1, 0), ("raw-d3", 3, 0), ("verl-1-3", 1, 2)]


def main(model: str, trace_dir: Path, result_path: Path) -> None:
    t0 = time.monotonic()
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    import profwin_vllm

    def spec(window: str, prefix: str) -> ProfileSpec:
        return ProfileSpec(window=Window.parse(window), output_dir=trace_dir, prefix=prefix)

    launch = profwin_vllm.VllmBackend().plan(spec("2:5", "launch"), version="0.32.0")
    imported = time.monotonic()
    llm = tiny_llm(model, launch.launch["profiler_config"])
    started = time.monotonic()
    params = SamplingParams(max_tokens=MAX_TOKENS, ignore_eos=True, temperature=0.0)
    prompt = [TokensPrompt(prompt_token_ids=PROMPT)]

    def generate() -> int:
        return len(llm.generate(prompt, params, use_tqdm=False)[0].outputs[0].token_ids)

    report: dict[str, object] = {"version": str(profwin_vllm.resolve_version(None)[0]), "sessions": {}, "raw": {}}
    for name, window, version in SESSIONS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with profwin_vllm.session(llm, spec(window, name), version=version) as s:
                tokens = generate()
        report["sessions"][name] = {  # type: ignore[index]
            "window": window,
            "tokens": tokens,
            "artifacts": [a.to_dict() for a in s.artifacts],
            "steps": {a.path.name: step_names(a.path) for a in s.artifacts if a.kind == "trace"},
            "counted": {a.path.name: count_steps(a.path, markers=(STEP_MARKER,)) for a in s.artifacts if a.kind == "trace"},
            "warnings": [str(w.message) for w in caught],
        }
    for name, delay, limit in RAW:
        before = set(trace_dir.iterdir())
        llm.start_profile(name, delay_iterations=delay, max_iterations=limit)
        generate()
        llm.stop_profile()
        new = sorted(p for p in set(trace_dir.iterdir()) - before if p.name.endswith(".pt.trace.json.gz"))
        report["raw"][name] = {"delay": delay, "max": limit, "steps": [step_names(p) for p in new]}  # type: ignore[index]
    llm_done = time.monotonic()
    try:
        report["async"] = asyncio.run(async_session(model, spec("1:4", "async")))
    except Exception:
        report["async"] = {"error": traceback.format_exc()}
    report["seconds"] = {
        "import": round(imported - t0, 1),
        "engine_start": round(started - imported, 1),
        "sessions": round(llm_done - started, 1),
        "async_llm": round(time.monotonic() - llm_done, 1),
    }
    result_path.write_text(json.dumps(report, indent=1))


async def async_session(model: str, spec: ProfileSpec) -> dict[str, object]:
    """One window of an AsyncLLM (its engine core runs in a child process), with the frontend
    profiler switched on to show that its trace covers the whole session."""
    from vllm import SamplingParams
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.inputs import TokensPrompt
    from vllm.v1.engine.async_llm import AsyncLLM

    import profwin_vllm

    spec = spec.replace(options={"vllm": {"frontend": True}})
    launch = profwin_vllm.VllmBackend().plan(spec, version="0.32.0")
    engine = AsyncLLM.from_engine_args(
        AsyncEngineArgs(
            model=model,
            dtype="bfloat16",
            max_model_len=128,
            enforce_eager=True,
            seed=0,
            profiler_config=dict(launch.launch["profiler_config"]),
        )
    )
    try:
        params = SamplingParams(max_tokens=MAX_TOKENS, ignore_eos=True, temperature=0.0)
        async with profwin_vllm.session(engine, spec) as s:
            async for out in engine.generate(TokensPrompt(prompt_token_ids=PROMPT), params, request_id="profwin-async"):
                tokens = len(out.outputs[0].token_ids)
    finally:
        engine.shutdown()
    return {
        "window": str(spec.window),
        "tokens": tokens,
        "artifacts": [a.to_dict() for a in s.artifacts],
        "steps": {a.path.name: step_names(a.path) for a in s.artifacts if a.kind == "trace"},
    }


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
