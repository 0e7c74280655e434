"""Drive ``profwin_sglang.session`` on an in-process ``sglang.Engine``; print what it wrote as JSON.

    python engine_session.py MODEL_DIR OUT_DIR WINDOW [WINDOW ...] [async:WINDOW ...]

Run with the SGLang environment's python and PYTHONPATH holding the torchvision shim and
profwin's sources (plus the generated plugin dist-info to load the server plugin; see conftest.py). Each window gets one session
around one 12-token request, after the engine has been warmed by a few requests; ``async:W`` runs
``async with session(...)`` around ``await engine.async_generate(...)`` on the engine's own loop.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

TOKENS = 12


def main(model: str, out: Path, windows: list[str]) -> None:
    import sglang

    from profwin import ProfileSpec, Window
    from profwin_sglang import session
    from profwin_sglang._plugin import STEP_MARKER
    from profwin_traces import TORCH_MARKER, summarize

    def step_names(path: Path) -> list[str]:
        # Markers named: this process has profwin on PYTHONPATH, without the entry points.
        return [step.label for step in summarize(path, top=0, markers=(TORCH_MARKER, STEP_MARKER)).steps]

    engine = sglang.Engine(
        model_path=model,
        device="cpu",
        attention_backend="torch_native",
        disable_cuda_graph=True,
        mem_fraction_static=0.5,  # a tolerance, not a size: see sglang_server.py
        max_total_tokens=4096,
        skip_server_warmup=True,
        log_level="warning",
        sleep_on_idle=True,  # an idle scheduler polls instead of spinning a core (sglang_server.py)
    )
    params = {"max_new_tokens": TOKENS, "temperature": 0, "ignore_eos": True}
    try:
        for prompt in ("w1 w2", "w3 w4 w5", "w6"):
            engine.generate(prompt, params)
        report = []
        for window in windows:
            is_async = window.startswith("async:")
            text = window.removeprefix("async:")
            spec = ProfileSpec(window=Window.parse(text), output_dir=out / text.replace(":", "-"), activities=["cpu"])
            caught = warnings.catch_warnings(record=True)
            seen = caught.__enter__()
            warnings.simplefilter("always")
            if is_async:

                async def profiled(spec: ProfileSpec = spec) -> Any:
                    async with session(engine, spec) as s:
                        await engine.async_generate("w7 w8", params)
                    return s

                s = engine.loop.run_until_complete(profiled())
            else:
                with session(engine, spec) as s:
                    engine.generate("w7 w8", params)
            caught.__exit__(None, None, None)
            report.append(
                {
                    "window": window,
                    "mode": s.results[0].details["mode"],
                    "plugin": s.results[0].details["plugin"],
                    "warnings": [str(w.message) for w in seen],
                    "artifacts": [{"steps": str(a.steps), "names": step_names(a.path), "file": a.path.name} for a in s.artifacts],
                }
            )
        print("PROFWIN-REPORT " + json.dumps(report), flush=True)
    finally:
        engine.shutdown()


if __name__ == "__main__":  # the engine spawns its scheduler with multiprocessing
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])
