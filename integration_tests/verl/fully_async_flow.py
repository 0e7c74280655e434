"""verl 0.9.1's fully-async rollouter, down to a rollout replica's profiler, on a real SGLang 0.5.12
server, with profwin put in place by verl itself (``VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch``):
``python fully_async_flow.py URL ADMIN_KEY SAVE_PATH START END VERL_SITE`` prints JSON.

It runs with the SGLang 0.5.12 environment's python (verl 0.9.1's SGLang pin) and verl 0.9.1's
environment appended to ``sys.path``: verl and SGLang in one process, as ``verl[sglang]`` installs
them. The chain is verl's own code::

    FullyAsyncRollouter._start_profiling -> LLMServerManager.start_profile
      -> RolloutReplica.start_profile -> server.start_profile.remote(**kwargs)
      -> SGLangHttpServer.start_profile -> build_sglang_profiler_args, tokenizer_manager.start_profile(**args)

and the same for stop (which ends in ``relocate_rollout_traces``). What is not verl's: Ray's actor
transport (``.remote`` calls the method directly: no Ray cluster), the in-process TokenizerManager
(its ``start_profile``/``stop_profile`` keywords go to the real server's ``/start_profile``, which
0.5.12 hands to its TokenizerManager unchanged, plus ``activities: ["CPU"]`` as the server runs on
CPU), and the rollouter object: its module imports the whole training stack (datasets, pyarrow,
...), so its two methods are compiled from verl's file and run on an object holding only the
``llm_server_manager`` they use.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import sys
import threading
import types
import warnings
from pathlib import Path
from typing import Any

os.environ["VERL_USE_EXTERNAL_MODULES"] = "profwin_verl.autopatch"
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
sys.path.append(sys.argv[6])  # verl's environment, after SGLang's own packages

with warnings.catch_warnings(record=True) as import_warnings:
    warnings.simplefilter("always")
    import verl  # runs profwin_verl.autopatch
    import verl.workers.rollout.sglang_rollout.async_sglang_server as sglang_server
    from verl.utils.profiler import build_rollout_dist_profiler
    from verl.utils.profiler.config import ProfilerConfig, TorchProfilerToolConfig
    from verl.workers.rollout.llm_server import LLMServerManager
    from verl.workers.rollout.sglang_rollout.async_sglang_server import SGLangHttpServer, SGLangReplica

from sglang_flow import steps  # this folder: the trace reading of verl's SGLang flow

import profwin_verl
from profwin.runtime.http import request

TOKENS = 12


def rollouter_methods() -> dict[str, Any]:
    """``FullyAsyncRollouter._start_profiling``/``_stop_profiling``, compiled from verl's own file."""
    path = Path(verl.__file__).parent / "experimental/fully_async_policy/fully_async_rollouter.py"
    tree = ast.parse(path.read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "FullyAsyncRollouter"]
    wanted = [n for n in cls.body if isinstance(n, ast.AsyncFunctionDef) and n.name in ("_start_profiling", "_stop_profiling")]
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=wanted, type_ignores=[]), str(path), "exec"), namespace)
    return {name: namespace[name] for name in ("_start_profiling", "_stop_profiling")}


class HttpTokenizerManager:
    """The keywords SGLangHttpServer hands its TokenizerManager, sent to the real server over HTTP."""

    def __init__(self, url: str, api_key: str) -> None:
        self.url, self.api_key = url, api_key
        self.sent: list[dict[str, Any]] = []

    async def start_profile(self, **kwargs: Any) -> None:
        self.sent.append(kwargs)
        reply = request(self.url, "/start_profile", body={**kwargs, "activities": ["CPU"]}, api_key=self.api_key, timeout=60)
        assert reply.ok, reply.describe()

    async def stop_profile(self) -> None:
        request(self.url, "/stop_profile", body={}, api_key=self.api_key, timeout=120)  # verl stops whatever happened


class ActorHandle:
    """``handle.method.remote(**kwargs)`` without Ray: the actor's method, called directly."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def __getattr__(self, name: str) -> Any:
        return types.SimpleNamespace(remote=getattr(self.actor, name))


def generate(url: str, tokens: int, prompt: str = "w5 w6 w7 w8") -> None:
    body = {"text": prompt, "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
    assert request(url, "/generate", body=body, timeout=300).ok


def main(url: str, api_key: str, save_path: str, start: int, end: int) -> None:
    tool = TorchProfilerToolConfig(contents=[], discrete=True, profile_token_start=start, profile_token_end=end)
    profiler = ProfilerConfig(tool="torch", enable=True, save_path=save_path, tool_config={"torch": tool})
    server = object.__new__(SGLangHttpServer)  # its __init__ launches SGLang: the server runs already
    server.replica_rank, server.replica_world_size = 0, 1
    server.profiler_controller = build_rollout_dist_profiler(0, 1, config=profiler, tool_config=tool)
    server.profiler_keep_global_ranks = sglang_server.rollout_profiler_global_ranks(profiler)
    server.tokenizer_manager = HttpTokenizerManager(url, api_key)
    replica = object.__new__(SGLangReplica)
    replica.servers = [ActorHandle(server)]
    manager = object.__new__(LLMServerManager)
    manager.rollout_replicas = [replica]
    rollouter = types.SimpleNamespace(llm_server_manager=manager)
    methods = rollouter_methods()
    threads = [threading.Thread(target=generate, args=(url, 5 + i, f"w{i} w9")) for i in range(3)]
    for t in threads:  # the server has run batches before: verl's absolute start_step means "now"
        t.start()
    for t in threads:
        t.join()

    async def run() -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await methods["_start_profiling"](rollouter)
        await asyncio.to_thread(generate, url, TOKENS)
        await methods["_stop_profiling"](rollouter)
        return [str(w.message) for w in caught]

    builder_warnings = asyncio.run(run())
    traces = steps(profwin_verl.rollout_trace_dir(profiler, 0))
    json.dump(
        {
            "verl": verl.__version__,
            "autopatch_warnings": [str(w.message) for w in import_warnings if "profwin-verl left verl" in str(w.message)],
            "server_module_builder_is_profwin": sglang_server.build_sglang_profiler_args
            is profwin_verl.build_sglang_profiler_args,
            "server_module_relocate_is_profwin": sglang_server.relocate_rollout_traces is profwin_verl.relocate_rollout_traces,
            "sent": server.tokenizer_manager.sent,
            "builder_warnings": builder_warnings,
            "traces": traces,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
