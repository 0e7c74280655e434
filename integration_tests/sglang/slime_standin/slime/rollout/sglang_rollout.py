"""slime/rollout/sglang_rollout.py at 624b824, as the router sees it: ``generate_rollout`` sends
every sample of the rollout through slime's router, then aborts what is left on every worker.
(What differs from slime and why: the package docstring.)"""

from __future__ import annotations

import json
import urllib.request
from argparse import Namespace
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from slime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput

__all__ = ["generate_rollout"]


def _call(url: str, body: dict[str, Any] | None, key: str | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=300) as reply:
        return json.loads(reply.read() or b"null")


def generate(args: Namespace, sample: dict[str, Any], sampling_params: dict[str, Any]) -> dict[str, Any]:
    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
    output = _call(url, {"text": sample["prompt"], "sampling_params": sampling_params, "return_logprob": True})
    return {**sample, "response_length": output["meta_info"]["completion_tokens"]}


def _sampling_params(args: Namespace) -> dict[str, Any]:
    return {"max_new_tokens": args.rollout_max_response_len, "temperature": args.rollout_temperature, "ignore_eos": True}


def abort(args: Namespace, rollout_id: int) -> list[list[dict[str, Any]]]:
    response = _call(f"http://{args.sglang_router_ip}:{args.sglang_router_port}/workers", None)
    urls = [worker["url"] for worker in response["workers"]]
    for url in urls:
        _call(f"{url}/abort_request", {"abort_all": True}, getattr(args, "sglang_admin_api_key", None))
    return []


def _run(args: Namespace, samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=max(1, len(samples))) as pool:
        return list(pool.map(lambda s: generate(args, s, _sampling_params(args)), samples))


def generate_rollout(
    args: Namespace, rollout_id: int, data_source: Any, evaluation: bool = False
) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    """An example to implement the generate_rollout function for an rule based rm rollout generation."""
    if evaluation:
        prompts = [{"prompt": "w1 w2 w3", "index": i} for i in range(args.n_samples_per_eval_prompt)]
        done = _run(args, prompts)
        abort(args, rollout_id)
        return RolloutFnEvalOutput(data={"eval": {"samples": done}})
    groups = data_source.get_samples(args.rollout_batch_size)
    done = _run(args, [sample for group in groups for sample in group])
    aborted_samples = abort(args, rollout_id)
    if aborted_samples:
        data_source.add_samples(aborted_samples)
    return RolloutFnTrainOutput(samples=done)
