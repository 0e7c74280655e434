"""One fresh SGLang server of ``fidelity_bench.py --sglang-python``: a window's DECODE batches vs the same batches unprofiled.

Runs with the SGLang environment's python (this checkout's ``packages/*/src`` on PYTHONPATH)::

    python benchmarks/parts/sglang_fidelity.py VARIANT MODEL_DIR START END TOKENS

It launches one CPU server the way the sglang integration tests do
(integration_tests/sglang/sglang_server.py), with sglang_batch_timer.py installed as an SGLang
plugin: every batch's ``Scheduler.run_batch`` and ``ModelRunner.forward`` wall time, taken with
``time.perf_counter`` in the scheduler, profiled or not. One request of ``TOKENS`` new tokens is
batch 0 (the prefill) and batches 1.. (one DECODE each); a window ``START:END`` counts those
batches. The server is warmed unprofiled (the integration tests' ``Server.warm``), then five
unprofiled requests time every batch (the reference: median per position), then one request is
profiled with ``VARIANT``:

* ``relative``: ``profwin_sglang.session`` on a server with profwin-sglang's server plugin:
  SGLang records exactly ``START..END-1`` (the plugin's relative ``start_step``).
* ``trim``: ``profwin_sglang.session`` on a stock server: SGLang records ``0..END-1``, profwin
  trims the trace to ``START..END-1``.
* ``start_step``: SGLang's own ``/start_profile`` with an absolute ``start_step`` (the counter read
  from the timer's lines) and ``num_steps``, on a stock server.

Prints one line, ``SGLANG-FIDELITY `` and JSON: the reference and profiled per-batch walls, the
``step[...]`` spans of the trace (name and ms, in order), the session's and the unprofiled
request's seconds and the server's start-up seconds.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1] / "integration_tests"
sys.path[:0] = [str(TESTS), str(TESTS / "sglang")]
from dist_info import dist_info_site  # noqa: E402
from sglang_server import Server  # noqa: E402

TAG = "SGLANG-FIDELITY "
VARIANTS = ("relative", "trim", "start_step")
REFERENCE_REQUESTS = 5
_TIMER = "sglang_batch_timer"
# The tests' --mem-fraction-static 0.05 leaves the KV cache no room when the shared machine's free
# memory drops by 5 % while the weights load (SGLang then refuses to start); --max-total-tokens
# still bounds the cache.
MEM_FRACTION = ("--mem-fraction-static", "0.3")


def _timer_site(site: Path, *, profwin_plugin: bool) -> Path:
    """A site folder registering the batch timer (and, when asked, profwin-sglang's server plugin)."""
    info = site / "profwin_batch_timer-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: profwin-batch-timer\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[sglang.srt.plugins]\nprofwin_batch_timer = {_TIMER}:register\n")
    shutil.copy(HERE / f"{_TIMER}.py", site / f"{_TIMER}.py")
    if profwin_plugin:
        dist_info_site(site, "profwin-sglang", groups=("sglang.srt.plugins",))
    return site


class Batches:
    """The timer's lines, read as they grow: each request's batches."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = 0
        self.forward_ct = 0  # the scheduler's batch counter after the last batch read

    def new(self) -> list[dict[str, Any]]:
        lines = self.path.read_text().splitlines() if self.path.exists() else []
        fresh, self.seen = lines[self.seen :], len(lines)
        rows = []
        for line in fresh:
            ct, mode, bs, run_batch, forward = line.split()
            rows.append(
                {"forward_ct": int(ct), "mode": mode, "bs": int(bs), "run_batch": float(run_batch), "forward": float(forward)}
            )
        if rows:
            self.forward_ct = rows[-1]["forward_ct"]
        return rows


def _steps(path: Path) -> list[dict[str, Any]]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("step[")]
    return [{"name": e["name"], "ms": e["dur"] / 1000} for e in sorted(spans, key=lambda e: e["ts"])]


def _post(url: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            reply.read()
    except urllib.error.HTTPError:  # /stop_profile after SGLang's own auto-stop: nothing to stop
        pass


def _profiled(variant: str, server: Server, batches: Batches, start: int, end: int, tokens: int, out: Path) -> Path | None:
    if variant == "start_step":
        batches.new()  # nothing ran since the reference, so the next batch is forward_ct + 1
        body = {
            "output_dir": str(out),
            "start_step": batches.forward_ct + 1 + start,
            "num_steps": end - start,
            "activities": ["CPU"],
            "with_stack": False,
            "record_shapes": False,
            "profile_prefix": "native",
        }
        _post(server.url + "/start_profile", body)
        server.generate(tokens)
        _post(server.url + "/stop_profile", {})
        traces = sorted(out.glob("*.trace.json.gz"))
        return traces[0] if traces else None
    from profwin import ProfileSpec, Window
    from profwin_sglang import session

    spec = ProfileSpec(window=Window(start, end), output_dir=out, activities=("cpu",), options={"sglang": {"start": variant}})
    with session(server.url, spec) as s:
        server.generate(tokens)
    return s.artifacts[0].path if s.artifacts else None


def run(variant: str, model: Path, start: int, end: int, tokens: int) -> dict[str, Any]:
    if variant not in VARIANTS:
        raise SystemExit(f"variant: must be one of {list(VARIANTS)} (got {variant!r})")
    work = Path(tempfile.mkdtemp(prefix="profwin-sglang-fidelity-"))
    site = _timer_site(work / "site", profwin_plugin=variant == "relative")
    os.environ["PROFWIN_BATCH_TIMES"] = str(work / "batches.txt")
    # As profwin's launch environment: without the plugin (the trim variant) the server then says
    # which profiler it runs, and profwin sends it only what that profiler takes.
    os.environ["SGLANG_EXPOSE_OWN_ENV_VARS"] = "1"
    batches = Batches(work / "batches.txt")
    server = Server(model, work, plugin_site=site, python=Path(sys.executable), extra_args=MEM_FRACTION)
    server.start()
    try:
        server.warm()
        batches.new()
        reference: list[list[dict[str, Any]]] = []
        seconds: list[float] = []
        for _ in range(REFERENCE_REQUESTS):
            began = time.perf_counter()
            server.generate(tokens)
            seconds.append(time.perf_counter() - began)
            reference.append(batches.new())
        began = time.perf_counter()
        trace = _profiled(variant, server, batches, start, end, tokens, work / "traces")
        session_s = time.perf_counter() - began
        profiled = batches.new()
    except Exception:
        print(server.log_tail(), file=sys.stderr)
        raise
    finally:
        server.stop()
    shortest = min(map(len, reference))
    return {
        "variant": variant,
        "reference": {
            key: [statistics.median(r[i][key] for r in reference) for i in range(shortest)] for key in ("run_batch", "forward")
        },
        "reference_modes": [b["mode"] for b in reference[0]],
        "batches": {key: [b[key] for b in profiled] for key in ("run_batch", "forward")},
        "modes": [b["mode"] for b in profiled],
        "steps": _steps(trace) if trace is not None else [],
        "session_s": session_s,
        "request_s": statistics.median(seconds),
        "startup_s": server.startup_s,
    }


if __name__ == "__main__":
    variant, model, start, end, tokens = sys.argv[1], Path(sys.argv[2]), *map(int, sys.argv[3:6])
    print(TAG + json.dumps(run(variant, model, start, end, tokens)), flush=True)
