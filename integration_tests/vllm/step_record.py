"""vLLM's own record of each engine step, taken where vLLM's scheduler runs.

Imported by the scripts that run in an engine's environment (``token_windows.py`` here,
``../verl/vllm_engine.py``, ``../trl/trl_training.py``, and, through ``collective_rpc``, the engine
core of OpenRLHF's engine actors), never by profwin. It hooks vLLM's
``Scheduler.update_from_output`` (one call per engine step, with that step's scheduler output and
the model runner's sampled tokens) and, while a record is open, appends for each step:

* ``annotation``: the step annotation vLLM writes for it
  (``vllm.v1.utils.compute_iteration_details``, the same words as in its trace);
* ``sampled``: for every request the step scheduled, how many tokens the model runner sampled
  for it;
* ``preempted``: the requests vLLM's scheduler preempted while it made the step.

Nothing of profwin's computes it, and it changes nothing: the original method runs as before.
The tests derive the steps a token window records from it (record_check.py).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

__all__ = ["StepRecord", "start", "take", "trace_names"]


def trace_names(path: Path) -> list[str]:
    """vLLM's step annotations and profwin's token annotations in a trace (host side, read with
    ``json.load``: nothing of profwin's), in time order; an enclosing span first when two start
    together (profwin's annotation encloses vLLM's)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    found = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") == "user_annotation"
        and str(e.get("name", "")).startswith(("execute_", "profwin.tokens"))
    ]
    return [e["name"] for e in sorted(found, key=lambda e: (e["ts"], -e.get("dur", 0)))]


class StepRecord:
    """vLLM's own record of each step while ``steps`` is a list (``None``: not recording)."""

    def __init__(self) -> None:
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.utils import compute_iteration_details

        self.steps: list[dict[str, Any]] | None = None
        original = Scheduler.update_from_output
        record = self

        def update_from_output(self: Any, scheduler_output: Any, model_runner_output: Any) -> Any:
            if record.steps is not None:
                details = compute_iteration_details(scheduler_output)
                sampled = {
                    req_id: len(tokens)
                    for req_id, tokens in zip(model_runner_output.req_ids, model_runner_output.sampled_token_ids, strict=False)
                }
                record.steps.append(
                    {
                        "annotation": (
                            f"execute_context_{details.num_ctx_requests}({details.num_ctx_tokens})_"
                            f"generation_{details.num_generation_requests}({details.num_generation_tokens})"
                        ),
                        "sampled": {r: n for r, n in sampled.items() if r in scheduler_output.num_scheduled_tokens},
                        "preempted": sorted(getattr(scheduler_output, "preempted_req_ids", None) or ()),
                    }
                )
            return original(self, scheduler_output, model_runner_output)

        Scheduler.update_from_output = update_from_output  # type: ignore[method-assign]


_here: list[StepRecord] = []  # this process's record, made on the first start()


def start(worker: Any = None) -> None:
    """Open a record in this process (hooking the scheduler the first time). Takes the worker
    ``collective_rpc`` passes, and ignores it: with vLLM's ``uni`` executor the worker runs in
    the engine core's process, where the scheduler is."""
    if not _here:
        _here.append(StepRecord())
    _here[0].steps = []


def take(worker: Any = None) -> list[dict[str, Any]]:
    """Close this process's record and return its steps."""
    steps = _here[0].steps if _here else None
    if _here:
        _here[0].steps = None
    return steps or []
