"""verl's own SGLang rollout profiling code path against a real tokenizer manager: ``python
verl_sglang_engine.py MODEL OUT SIDE START END`` with an SGLang environment's python and verl on
PYTHONPATH; prints JSON.

An in-process ``sglang.Engine`` has the tokenizer manager verl's ``SGLangHttpServer`` drives. Its
``start_profile``/``stop_profile`` methods (verl/workers/rollout/sglang_rollout/
async_sglang_server.py) run unchanged on an object that holds what they read: verl's own
``DistProfiler`` (``build_rollout_dist_profiler``) for a config with ``profile_token_start/end``,
the replica rank, and the Engine's tokenizer manager. They run on the Engine's event loop, as in
verl's server. ``SIDE`` is ``verl`` (verl's own builder) or ``profwin`` (after
``profwin_verl.enable()``, what ``VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch`` does).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

TOKENS = 12


def main(model: str, out: str, side: str, start: int, end: int) -> None:
    import sglang

    if side == "profwin":  # as VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch does: before the server module
        import profwin_verl

        profwin_verl.enable()
    import verl.workers.rollout.sglang_rollout.async_sglang_server as server_module
    from verl.utils.profiler.config import ProfilerConfig, TorchProfilerToolConfig
    from verl.utils.profiler.profile import build_rollout_dist_profiler

    from profwin_sglang._plugin import STEP_MARKER
    from profwin_traces import TORCH_MARKER, TraceError, summarize

    tool = TorchProfilerToolConfig(contents=[], discrete=True, profile_token_start=start, profile_token_end=end)
    profiler = ProfilerConfig(tool="torch", enable=True, save_path=out, tool_config={"torch": tool})
    # 0.5.12 on CPU also needs the piecewise CUDA graph off (its runner calls torch.cpu.graph_pool_handle).
    older = {"disable_piecewise_cuda_graph": True} if sglang.__version__ == "0.5.12" else {}
    engine = sglang.Engine(
        model_path=model, device="cpu", attention_backend="torch_native", disable_cuda_graph=True,
        mem_fraction_static=0.5, max_total_tokens=4096, skip_server_warmup=True, log_level="warning",
        sleep_on_idle=True, **older,  # an idle scheduler polls instead of spinning a core (sglang_server.py)
    )  # fmt: skip
    params = {"max_new_tokens": TOKENS, "temperature": 0, "ignore_eos": True}
    report: dict[str, Any] = {"sglang": sglang.__version__}
    try:
        for prompt in ("w1 w2", "w3 w4 w5", "w6"):  # the scheduler's counter is past any small window
            engine.generate(prompt, params)
        server = SimpleNamespace(
            profiler_controller=build_rollout_dist_profiler(0, 1, config=profiler, tool_config=tool),
            replica_rank=0, replica_world_size=1, profiler_keep_global_ranks=None,
            tokenizer_manager=engine.tokenizer_manager,
        )  # fmt: skip
        loop = engine.loop
        try:
            loop.run_until_complete(server_module.SGLangHttpServer.start_profile(server))
        except Exception as exc:
            report["start_error"] = f"{type(exc).__name__}: {exc}"
            report["start_traceback"] = traceback.format_exc()[-2000:]
            return
        engine.generate("w7 w8", params)
        try:
            loop.run_until_complete(server_module.SGLangHttpServer.stop_profile(server))
        except Exception as exc:
            report["stop_error"] = f"{type(exc).__name__}: {exc}"
            report["stop_traceback"] = traceback.format_exc()[-3000:]
            return
        traces: dict[str, list[str]] = {}
        for path in sorted(Path(out).rglob("*.trace.json.gz")):
            try:
                traces[str(path)] = [s.label for s in summarize(path, top=0, markers=(TORCH_MARKER, STEP_MARKER)).steps]
            except TraceError as exc:
                traces[str(path)] = [f"unreadable: {exc}"]
        report["traces"] = traces
        report["args"] = repr(server_module.build_sglang_profiler_args(profiler, tool, 0))
    finally:
        engine.shutdown()
        json.dump(report, sys.stdout)
        sys.stdout.flush()
        os._exit(0)  # the Engine's children are gone; skip the interpreter's slow teardown


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
