"""Rollout functions that fail the way a slime rollout can, for profwin-slime's fault tests
(named by ``profwin_rollout_function``; slime's signature, real requests through the real router)."""

from __future__ import annotations

import json
import urllib.request
from argparse import Namespace
from typing import Any

from slime.rollout import sglang_rollout


def leaves_the_router(args: Namespace, rollout_id: int, data_source: Any, evaluation: bool = False) -> Any:
    """One sample per worker, then ``args.leaving_worker`` leaves the router (the router's own
    ``DELETE /workers/{id}``, as an autoscaler or slime's fault tolerance removes a worker), then
    one more sample, which only the worker left can serve."""
    router = f"http://{args.sglang_router_ip}:{args.sglang_router_port}"
    output = sglang_rollout.generate_rollout(args, rollout_id, data_source, evaluation)
    with urllib.request.urlopen(router + "/workers", timeout=30) as reply:
        (worker,) = [w for w in json.loads(reply.read())["workers"] if w["url"] == args.leaving_worker]
    request = urllib.request.Request(f"{router}/workers/{worker['id']}", method="DELETE")
    with urllib.request.urlopen(request, timeout=30) as reply:
        reply.read()
    sglang_rollout._run(args, [{"prompt": "w2 w5 w6 w7", "index": -1}])
    return output


def raises(args: Namespace, rollout_id: int, data_source: Any, evaluation: bool = False) -> Any:
    """slime's rollout, then a failure before it returns (a reward model that cannot be reached)."""
    sglang_rollout.generate_rollout(args, rollout_id, data_source, evaluation)
    raise RuntimeError(f"rollout {rollout_id}: the reward model at http://rm:8000 did not answer")
