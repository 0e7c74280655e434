"""A test-harness SGLang general plugin: SGLang's own record of what each batch produced.

The token-window tests install it in their servers (an entry point of group
``sglang.srt.plugins`` in a generated dist-info, as an install would register it; never shipped).
In each scheduler process it runs after ``Scheduler.process_batch_result`` (once per batch, after
SGLang appended the batch's tokens to its requests) and appends one line to the file named by
``PROFWIN_BATCH_RECORD``::

    <forward_iter> <MODE> <rid>=<tokens>[+<prefilled>] <rid>=<tokens>[+<prefilled>] ...

``forward_iter`` is the scheduler's batch counter when the batch ran, ``tokens`` the length of the
request's ``output_ids`` after it: the batch produced that request's token ``tokens - 1`` when the
count grew. ``prefilled`` is what the batch computed of the request's prompt, SGLang's own
``batch.extend_lens`` entry of that row, for the rows an extend batch (``EXTEND``, ``MIXED``)
prefilled: every row but the running requests a mixed batch decodes (``batch.decoding_reqs``).
Nothing of profwin's computes it. Without the variable the plugin does nothing.

It also runs before ``Scheduler.process_input_requests``, where the scheduler takes the requests
that came in (between two batches), and for each profile request among them appends to the same
file::

    <forward_iter> PROFILE <START_PROFILE|STOP_PROFILE>

``forward_iter`` the number SGLang gives the next batch: a session started there has that batch
for its step 0.

With ``PROFWIN_BATCH_QUEUES`` set too, it also runs before ``Scheduler.run_batch`` (once per
batch, before SGLang counts it) and appends to that file the scheduler's own queues there::

    <forward_iter> <waiting> <running>

``waiting`` the length of ``scheduler.waiting_queue``, ``running`` that of
``scheduler.running_batch.reqs``, ``forward_iter`` the number SGLang is about to give the batch.
"""

from __future__ import annotations

import os
from typing import Any

_TARGET = "sglang.srt.managers.scheduler.Scheduler.process_batch_result"
_RUN = "sglang.srt.managers.scheduler.Scheduler.run_batch"
_INPUT = "sglang.srt.managers.scheduler.Scheduler.process_input_requests"


def _recorder(path: str) -> Any:
    def after(result: Any, scheduler: Any, batch: Any, *args: Any, **kwargs: Any) -> Any:
        extend = list(batch.extend_lens or ()) if batch.forward_mode.is_extend() else []
        decoding = {id(r) for r in batch.decoding_reqs or ()}
        counts = " ".join(
            f"{req.rid}={len(req.output_ids)}" + (f"+{extend[i]}" if i < len(extend) and id(req) not in decoding else "")
            for i, req in enumerate(batch.reqs)
        )
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{batch.forward_iter} {batch.forward_mode.name} {counts}\n")
        return result

    return after


def _profile_requests(path: str) -> Any:
    def before(scheduler: Any, recv_reqs: Any, *args: Any, **kwargs: Any) -> None:
        for req in recv_reqs or ():
            if type(req).__name__ == "ProfileReq":
                with open(path, "a", encoding="utf-8") as f:
                    f.write(f"{scheduler.forward_ct + 1} PROFILE {req.req_type.name}\n")

    return before


def _queues(path: str) -> Any:
    def before(scheduler: Any, *args: Any, **kwargs: Any) -> None:
        running = getattr(scheduler.running_batch, "reqs", None) or ()
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{scheduler.forward_ct + 1} {len(scheduler.waiting_queue)} {len(running)}\n")

    return before


def register() -> None:
    """Entry point of group ``sglang.srt.plugins``."""
    path = os.environ.get("PROFWIN_BATCH_RECORD")
    if not path:
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    HookRegistry.register(_TARGET, _recorder(path), HookType.AFTER)
    HookRegistry.register(_INPUT, _profile_requests(path), HookType.BEFORE)
    queues = os.environ.get("PROFWIN_BATCH_QUEUES")
    if queues:
        HookRegistry.register(_RUN, _queues(queues), HookType.BEFORE)
