"""The session lifecycle on a real in-process vLLM, around vLLM's auto-stop at max_iterations.

Run by test_lifecycle.py with an engine environment's python and profwin on PYTHONPATH:
``python lifecycle.py <model-dir> <trace-dir> <result.json>``. The engine is launched with
profwin's config for window 1:3 on the installed version; every generate call runs 8 steps, so
vLLM stops by itself at the top of step 3 (up to 0.28 through ``_call_stop``, which leaves the
worker's session active; from 0.29 through ``stop()``). Then:

1. ``auto-then-stop``: a profwin session (vLLM auto-stops inside it, profwin's exit stops).
2. ``second``: the next profwin session on the same engine.
3. ``leftover``: a raw ``start_profile`` that auto-stops and is never stopped, as a crashed client
   would leave it; then a profwin session with ``on_active="error"``, then one with
   ``on_active="restart"``, then (after a ``stop_profile`` by hand) a last one.
"""

from __future__ import annotations

import json
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

from tiny_llm import step_names, tiny_llm  # sets vLLM's environment before vLLM is imported

from profwin import ProfileSpec, SessionError, Window

MAX_TOKENS = 8
PROMPT = [5, 6, 7, 8, 9, 10]


def main(model: str, trace_dir: Path, result_path: Path) -> None:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    import profwin_vllm

    version = str(profwin_vllm.resolve_version(None)[0])
    launch = profwin_vllm.VllmBackend().plan(ProfileSpec(window=Window(1, 3), output_dir=trace_dir), version=version)
    llm = tiny_llm(model, launch.launch["profiler_config"])
    params = SamplingParams(max_tokens=MAX_TOKENS, ignore_eos=True, temperature=0.0)
    prompt = [TokensPrompt(prompt_token_ids=PROMPT)]

    def generate() -> None:
        llm.generate(prompt, params, use_tqdm=False)

    def profwin_session(name: str, on_active: str = "error") -> dict[str, Any]:
        spec = ProfileSpec(window=Window(1, 3), output_dir=trace_dir, prefix=name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with profwin_vllm.session(llm, spec, on_active=on_active) as s:
                    generate()
            except SessionError as exc:
                return {"error": str(exc), "warnings": [str(w.message) for w in caught]}
        return {
            "results": [r.message for r in s.results],
            "steps": [step_names(a.path) for a in s.artifacts if a.kind == "trace"],
            "windows": [str(a.steps) for a in s.artifacts if a.kind == "trace"],
            "warnings": [str(w.message) for w in caught],
        }

    report: dict[str, Any] = {"version": version, "mechanism": launch.mechanism}
    report["auto-then-stop"] = profwin_session("auto")
    report["second"] = profwin_session("second")
    # A client that started a session and never stopped it; vLLM stops recording at max_iterations.
    before = set(trace_dir.iterdir())
    llm.start_profile(**dict(launch.details["start_kwargs"]))
    generate()
    report["leftover-trace"] = [step_names(p) for p in sorted(set(trace_dir.iterdir()) - before) if ".pt.trace.json" in p.name]
    report["busy"] = profwin_session("busy")
    report["restart"] = profwin_session("restart", on_active="restart")
    llm.stop_profile()  # what `profwin stop` does for a session it does not know
    report["after-stop"] = profwin_session("after")
    result_path.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    try:
        main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
    except Exception:
        traceback.print_exc()
        sys.exit(1)
