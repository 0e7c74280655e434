"""verl's SGLang rollout profiling flow against a real, warm SGLang server, with verl's functions
and with profwin's: ``python sglang_flow.py URL ADMIN_KEY SAVE_PATH START END``, in the verl
environment, prints JSON.

For each side, what ``SGLangHttpServer`` does (``verl/workers/rollout/sglang_rollout/
async_sglang_server.py``): ``build_sglang_profiler_args`` -> ``start_profile(**args)`` -> the
rollout's generation -> ``stop_profile()`` -> ``relocate_rollout_traces``. verl calls the
tokenizer manager in-process; here the same arguments go over HTTP (``/start_profile``), with
``activities: ["CPU"]`` added because the server runs on CPU. Before each side the server serves
other requests first, so its batch counter is far past the window. The SGLang the server runs is
installed in this process's environment too (its package on PYTHONPATH, never imported), as it is
where verl launches SGLang: profwin's builder judges the server plugin from it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import urllib.request
import warnings
from typing import Any

import verl.utils.profiler.config as verl_config
from verl.utils.profiler.config import ProfilerConfig, TorchProfilerToolConfig

import profwin_verl
from profwin.runtime.http import request
from profwin_traces import TraceError, summarize

TOKENS = 12  # one request: 1 prefill batch + 11 decode batches


def generate(url: str, tokens: int, prompt: str = "w5 w6 w7 w8") -> None:
    body = {"text": prompt, "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
    reply = request(url, "/generate", body=body, timeout=300)
    assert reply.ok, (reply.status, reply.detail, reply.error)


def warm(url: str) -> None:
    """Batches served before the session, some of them concurrent."""
    threads = [threading.Thread(target=generate, args=(url, 5 + i, f"w{i} w9")) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    urllib.request.urlopen(url + "/health", timeout=60).read()


def steps(directory: str) -> dict[str, list[str]]:
    found = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".trace.json.gz"):
            try:
                found[name] = [s.label for s in summarize(os.path.join(directory, name), top=0).steps]
            except TraceError:
                found[name] = []
    return found


def main(url: str, api_key: str, save_path: str, start: int, end: int) -> None:
    tool = TorchProfilerToolConfig(contents=[], discrete=True, profile_token_start=start, profile_token_end=end)
    profiler = ProfilerConfig(tool="torch", enable=True, save_path=save_path, tool_config={"torch": tool})
    report: dict[str, Any] = {}
    for rank, (side, module) in enumerate((("verl", verl_config), ("profwin", profwin_verl))):
        warm(url)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            args = module.build_sglang_profiler_args(profiler, tool, rank)
        report[f"{side}_warnings"] = [str(w.message) for w in caught]
        started = request(url, "/start_profile", body={**args, "activities": ["CPU"]}, api_key=api_key, timeout=60)
        generate(url, TOKENS)
        stopped = request(url, "/stop_profile", body={}, api_key=api_key, timeout=120)  # verl always stops
        module.relocate_rollout_traces(profiler, rank, 1, None)
        report[side] = {
            "args": args,
            "started": started.ok,
            "stopped": [stopped.status, stopped.detail],
            "traces": steps(module.rollout_trace_dir(profiler, rank)),
        }
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
