"""slime/ray/rollout.py at 624b824: the parts of ``RolloutManager`` that call the rollout function."""

from __future__ import annotations

from typing import Any

from slime.rollout.base_types import call_rollout_fn
from slime.utils.misc import load_function


class DataSource:
    """slime's data source as the rollout function sees it: ``get_samples(n)`` gives ``n`` prompt
    groups, ``add_samples`` takes back aborted ones (here: prompts of the tiny model's words)."""

    def __init__(self, args: Any) -> None:
        self.args = args
        self.served = 0

    def get_samples(self, num_samples: int) -> list[list[dict[str, Any]]]:
        groups = []
        for _ in range(num_samples):
            prompt = f"w{self.served % 7 + 1} w5 w6 w7"
            groups.append([{"prompt": prompt, "index": self.served} for _ in range(self.args.n_samples_per_prompt)])
            self.served += 1
        return groups

    def add_samples(self, samples: list[list[dict[str, Any]]]) -> None:
        pass


class RolloutManager:
    """The class to run rollout and convert rollout data to training data (slime wraps it in ``ray.remote``)."""

    def __init__(self, args: Any) -> None:
        self.args = args
        self.data_source = DataSource(args)
        self.generate_rollout = load_function(self.args.rollout_function_path)
        self.eval_generate_rollout = load_function(self.args.eval_function_path)

    def generate(self, rollout_id: int) -> int:
        data = call_rollout_fn(self.generate_rollout, self.args, rollout_id, self.data_source, evaluation=False)
        return len(data.samples)

    def eval(self, rollout_id: int) -> int:
        result = call_rollout_fn(self.eval_generate_rollout, self.args, rollout_id, self.data_source, evaluation=True)
        return len(result.data)
