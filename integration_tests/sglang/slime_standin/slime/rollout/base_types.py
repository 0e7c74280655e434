"""slime/rollout/base_types.py at 624b824: the rollout function's outputs and how slime calls it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RolloutFnTrainOutput:
    samples: list[Any]
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class RolloutFnEvalOutput:
    data: dict[str, Any]
    metrics: dict[str, Any] | None = None


def call_rollout_fn(fn: Any, *args: Any, evaluation: bool, **kwargs: Any) -> Any:
    output = fn(*args, **kwargs, evaluation=evaluation)
    # compatibility for legacy version
    if not isinstance(output, (RolloutFnTrainOutput, RolloutFnEvalOutput)):
        output = RolloutFnEvalOutput(data=output) if evaluation else RolloutFnTrainOutput(samples=output)
    return output
