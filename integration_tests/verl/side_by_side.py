"""verl 0.9.1's rollout profiling functions and profwin_verl's, side by side on the same verl objects.

Runs in the verl environment (build_env.sh) with profwin on PYTHONPATH and prints one JSON
document: for every config of a grid (tools, ``contents`` variants, windows with ``None``/0/open
ends, ``ranks``/``all_ranks``, relative and absolute ``save_path``, replica ranks) what verl's
function returned and what profwin's returned. ``test_side_by_side.py`` compares them and
``--table`` prints the summary quoted in docs/integrations/verl.md::

    python integration_tests/verl/side_by_side.py [--table]
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import verl
import verl.utils.profiler.config as verl_config
from verl.utils.profiler.config import NPUToolConfig, ProfilerConfig, TorchProfilerToolConfig
from verl.utils.profiler.profile import build_rollout_dist_profiler

import profwin_verl as ours

ENV_KEYS = (
    "VLLM_TORCH_PROFILER_DIR",
    "VLLM_TORCH_PROFILER_WITH_STACK",
    "VLLM_TORCH_PROFILER_RECORD_SHAPES",
    "VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY",
)
CONTENTS = {
    "torch": [[], ["cuda"], ["cpu"], ["stack", "shapes"], ["cuda", "cpu", "memory", "shapes", "stack"]],
    "npu": [[], ["npu"], ["npu", "module", "memory"], ["cpu", "shapes"]],
}
WINDOWS = [(None, None), (0, None), (None, 8), (0, 8), (3, None), (1, 2), (3, 11), (7, 19), (20, 80)]
RANKS = [(False, []), (False, [1, 5]), (False, [0, 6, 7]), (True, [])]
REPLICA_WORLD = 2
REPLICAS = range(4)
TRACE_NAMES = [
    "host_123.1700000000000.pt.trace.json.gz",
    "profwin-rank-0.pt.trace.json.gz",
    "profwin-rank-1.1.pt.trace.json.gz",
    "server_rank3.pt.trace.json.gz",
    "1700000000-TP-0.trace.json.gz",
    "1700000000-TP-1-EXTEND.trace.json.gz",
    "1700000000-TP-1-DP-1.trace.json.gz",
    "1700000000-TP-5.trace.json.gz",
    "memory_snapshot.pickle",
]


@contextlib.contextmanager
def captured_env() -> Iterator[dict[str, str | None]]:
    """The legacy vLLM variables a builder exported, with the environment restored afterwards."""
    before = {key: os.environ.pop(key, None) for key in ENV_KEYS}
    seen: dict[str, str | None] = {}
    try:
        yield seen
    finally:
        seen.update({key: os.environ.get(key) for key in ENV_KEYS})
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def call(function: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """A builder's result, the variables it exported and the warnings it gave."""
    with captured_env() as env, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = function(*args, **kwargs)
    if "profiler_config" in result:
        result = {**result, "profiler_config": json.loads(result["profiler_config"])}
    return {"result": result, "env": env, "warnings": [str(w.message) for w in caught]}


def builder_cases(save_root: str) -> list[dict[str, Any]]:
    cases = []
    for tool, save_kind, (all_ranks, ranks) in itertools.product(CONTENTS, ("relative", "absolute"), RANKS):
        for contents, (start, end) in itertools.product(CONTENTS[tool], WINDOWS):
            kind = TorchProfilerToolConfig if tool == "torch" else NPUToolConfig
            tool_config = kind(contents=list(contents), discrete=True, profile_token_start=start, profile_token_end=end)
            save_path = "outputs/profile" if save_kind == "relative" else os.path.join(save_root, "profile")
            profiler = ProfilerConfig(
                tool=tool,
                enable=True,
                all_ranks=all_ranks,
                ranks=list(ranks),
                save_path=save_path,
                tool_config={tool: tool_config},
            )
            case: dict[str, Any] = {
                "tool": tool, "contents": contents, "window": [start, end], "all_ranks": all_ranks, "ranks": ranks,
                "save_path": save_path,
            }  # fmt: skip
            rank = 1
            for side, module in (("verl", verl_config), ("profwin", ours)):
                case[side] = {
                    "vllm": call(module.build_vllm_profiler_args, profiler, tool_config, rank),
                    "vllm_no_env": call(module.build_vllm_profiler_args, profiler, tool_config, rank, legacy_env=False),
                    "sglang": call(module.build_sglang_profiler_args, profiler, tool_config, rank),
                    "trace_dir": module.rollout_trace_dir(profiler, rank),
                    "global_ranks": sorted(module.rollout_profiler_global_ranks(profiler) or []) or None,
                }
            # verl's NPU profiler imports torch_npu; which replicas profile does not depend on the tool.
            selector = dataclasses.replace(profiler, tool="torch") if tool == "npu" else profiler
            selector_tool = TorchProfilerToolConfig(discrete=tool_config.discrete) if tool == "npu" else tool_config
            case["verl"]["replicas"] = [
                r
                for r in REPLICAS
                if _verl_profiles(build_rollout_dist_profiler(r, REPLICA_WORLD, config=selector, tool_config=selector_tool))
            ]
            reading = ours.load_verl(profiler)
            case["profwin"]["replicas"] = [r for r in REPLICAS if reading.profiles_replica(r, REPLICA_WORLD)]
            case["profwin"]["reading"] = reading.to_dict()
            cases.append(case)
    return cases


def _verl_profiles(profiler: Any) -> bool:
    """verl's rollout servers' ``_should_profile()``."""
    return bool(profiler.check_enable() and profiler.check_this_rank() and profiler.is_discrete_mode())


def guard_cases() -> list[dict[str, Any]]:
    """verl's early returns: no profiler config, no tool config."""
    tool_config = TorchProfilerToolConfig(contents=["stack"], profile_token_start=2, profile_token_end=4)
    profiler = ProfilerConfig(tool="torch", enable=True, save_path="p", tool_config={"torch": tool_config})
    cases = []
    for label, args in (("no profiler", (None, tool_config, 0)), ("no tool", (profiler, None, 0))):
        cases.append(
            {
                "case": label,
                "verl": [verl_config.build_vllm_profiler_args(*args), verl_config.build_sglang_profiler_args(*args)],
                "profwin": [ours.build_vllm_profiler_args(*args), ours.build_sglang_profiler_args(*args)],
            }
        )
    return cases


def local_rank_cases() -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "world": world,
            "verl": verl_config.rollout_trace_local_rank(name, world),
            "profwin": ours.rollout_trace_local_rank(name, world),
        }
        for name, world in itertools.product(TRACE_NAMES, (0, 1, 2, 4, 8))
    ]


def relocation_cases(root: str) -> list[dict[str, Any]]:
    """Both relocations on identical directory trees of real files."""
    cases = []
    for relocate, world, keep, rank in itertools.product((False, True), (1, 2, 4), (None, [2, 3], [0, 5]), (0, 1)):
        trees = {}
        for side, module in (("verl", verl_config), ("profwin", ours)):
            base = os.path.join(root, f"{side}-{relocate}-{world}-{keep}-{rank}")
            profiler = ProfilerConfig(tool="torch", enable=True, save_path=base, relocate_results=relocate, tool_config={})
            trace_dir = module.rollout_trace_dir(profiler, rank)
            os.makedirs(trace_dir)
            for name in TRACE_NAMES:
                with open(os.path.join(trace_dir, name), "w") as f:
                    f.write(name)
            moved = module.relocate_rollout_traces(profiler, rank, world, keep)
            files = sorted(os.path.relpath(os.path.join(d, n), base) for d, _, names in os.walk(base) for n in names)
            trees[side] = {"returned": [os.path.relpath(p, base) for p in moved], "files": files}
        cases.append({"relocate": relocate, "world": world, "keep": keep, "rank": rank, **trees})
    return cases


def main() -> None:
    root = tempfile.mkdtemp(prefix="profwin-verl-sbs-")
    try:
        document = {
            "verl": verl.__version__,
            "builders": builder_cases(root),
            "guards": guard_cases(),
            "local_rank": local_rank_cases(),
            "relocation": relocation_cases(root),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if "--table" in sys.argv:
        print_table(document)
    else:
        json.dump(document, sys.stdout)


def print_table(document: dict[str, Any]) -> None:
    builders = document["builders"]
    print(f"verl {document['verl']}: {len(builders)} builder configs, {len(document['relocation'])} relocations, "
          f"{len(document['local_rank'])} file names")  # fmt: skip
    rows = {}
    for case in builders:
        start, end = case["window"]
        verl_vllm = case["verl"]["vllm"]["result"].get("profiler_config", {})
        ours_vllm = case["profwin"]["vllm"]["result"].get("profiler_config", {})
        verl_sg, ours_sg = case["verl"]["sglang"]["result"], case["profwin"]["sglang"]["result"]
        rows[(start, end)] = (
            f"| {start}:{end} | delay {verl_vllm.get('delay_iterations')} max {verl_vllm.get('max_iterations')} "
            f"| delay {ours_vllm.get('delay_iterations')} max {ours_vllm.get('max_iterations')} "
            f"| start_step {verl_sg.get('start_step')} num_steps {verl_sg.get('num_steps')} "
            f"| start_step {ours_sg.get('start_step')} num_steps {ours_sg.get('num_steps')} |"
        )
    print("| window | verl → vLLM | profwin → vLLM | verl → SGLang | profwin → SGLang |")
    print("|---|---|---|---|---|")
    for row in rows.values():
        print(row)


if __name__ == "__main__":
    main()
