"""profwin-slime in a real Ray actor, as slime runs its rollout function (run with the cached Ray
environment's python by test_router.py; prints one ``PROFWIN-REPORT {json}`` line).

The actor is the stand-in's ``slime.ray.rollout.RolloutManager`` made a Ray actor with
``ray.remote``, as slime's is; ``args`` is built the way slime's ``parse_args`` leaves it
(``--rollout-function-path profwin_slime.generate_rollout``, ``--custom-config-path`` with
profwin's keys, the router's address), and the driver calls ``generate(rollout_id)`` for
rollouts 0..4 and ``eval(1)``, as slime's ``train.py`` does.

    slime_ray_driver.py CONFIG.json     # {"router": URL, "admin_key": ..., "custom_config": PATH, "rollouts": 5}
"""

from __future__ import annotations

import json
import sys
import time
from argparse import Namespace
from pathlib import Path
from urllib.parse import urlsplit

import ray
from slime.ray.rollout import RolloutManager
from slime.utils.arguments import apply_custom_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # integration_tests/readiness.py
import readiness


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    router = urlsplit(config["router"])
    args = apply_custom_config(
        Namespace(
            rollout_function_path="profwin_slime.generate_rollout",
            eval_function_path=None,
            custom_config_path=config["custom_config"],
            sglang_router_ip=router.hostname,
            sglang_router_port=router.port,
            sglang_admin_api_key=config["admin_key"],
            rollout_batch_size=2,
            n_samples_per_prompt=1,
            n_samples_per_eval_prompt=2,
            rollout_max_response_len=config["tokens"],
            rollout_temperature=1.0,
        )
    )
    began = time.monotonic()
    readiness.patient_ray()  # on a loaded machine the node's raylet took over Ray's 30 s to register
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=True)  # its own, whatever else runs here
    up = time.monotonic() - began
    try:
        manager = ray.remote(RolloutManager).options(num_cpus=0).remote(args)
        generated = [ray.get(manager.generate.remote(rollout_id)) for rollout_id in range(config["rollouts"])]
        evaluated = ray.get(manager.eval.remote(1))

        def records(self: RolloutManager) -> list[dict[str, object]]:
            import profwin_slime

            return [r.to_dict() for r in profwin_slime.records()]

        found = ray.get(manager.__ray_call__.remote(records))
    finally:
        ray.shutdown()
    report = {"ray_up_s": round(up, 1), "wall_s": round(time.monotonic() - began, 1), "generated": generated}
    print("PROFWIN-REPORT " + json.dumps({**report, "evaluated": evaluated, "records": found}), flush=True)


if __name__ == "__main__":
    main()
