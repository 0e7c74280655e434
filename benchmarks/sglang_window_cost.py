"""What an exact relative window saves over the record-and-trim fallback, and what a token window
costs and records, on a live SGLang server.

    python benchmarks/sglang_window_cost.py --url http://127.0.0.1:30000 [--window 40:50] [--tokens 64] [--repeat 3]

The server should have the profwin-sglang server plugin (otherwise both rows use trim). For each
mode the same request (``--tokens`` new tokens, so that many batches) runs inside a session, side
by side with an unprofiled run; printed are the request's wall time relative to unprofiled, the
bytes the server wrote, and the bytes kept after trimming.

Then token windows, on a batch of ``--batch`` concurrent requests of different prompt lengths:
the batch's wall time unprofiled and with a token window armed that no request reaches (the
plugin watches every batch), side by side; and the token window ``--window`` next to the step
window of the same numbers: steps recorded and trace bytes. Ratios only: no timing is asserted
anywhere.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from profwin import ProfileSpec, Window
from profwin_sglang import session


def _generate(url: str, tokens: int, api_key: str | None = None) -> float:
    body = {"text": "w1 w2 w3", "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url + "/generate", json.dumps(body).encode(), headers)
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as reply:
        reply.read()
    return time.perf_counter() - began


def _batch(url: str, requests: int, tokens: int, api_key: str | None) -> float:
    """One /generate of ``requests`` prompts of different lengths at once; its wall time."""
    texts = [" ".join(f"w{(7 * i + j) % 1000}" for j in range(8 + 11 * i)) for i in range(requests)]
    body = {"text": texts, "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {api_key}"} if api_key else {})
    began = time.perf_counter()
    with urllib.request.urlopen(
        urllib.request.Request(url + "/generate", json.dumps(body).encode(), headers), timeout=600
    ) as reply:
        reply.read()
    return time.perf_counter() - began


def _tokens(args: argparse.Namespace, window: Window, tmp: Path) -> None:
    never = ProfileSpec(window=Window(100_000, 100_001, unit="tokens"), output_dir=tmp / "never", activities=("cpu",))
    times: dict[str, list[float]] = {"unprofiled": [], "armed": []}
    for _ in range(args.repeat):
        times["unprofiled"].append(_batch(args.url, args.batch, args.tokens, args.api_key))
        with session(args.url, never, api_key=args.api_key):
            times["armed"].append(_batch(args.url, args.batch, args.tokens, args.api_key))
    base = min(times["unprofiled"])
    print(f"\ntoken windows: a batch of {args.batch} requests, {args.tokens} tokens each, least of {args.repeat}")
    for name, values in times.items():
        print(f"{name:<11} {min(values) / base:>16.3f}")
    print(f"{'window ' + str(window):<18} {'steps':>8} {'bytes':>12}")
    for unit in ("tokens", "steps"):
        spec = ProfileSpec(window=Window(window.start, window.end, unit=unit), output_dir=tmp / unit, activities=("cpu",))  # type: ignore[arg-type]
        with session(args.url, spec, api_key=args.api_key) as s:
            _batch(args.url, args.batch, args.tokens, args.api_key)
        traces = [a for a in s.artifacts if a.kind == "trace"]
        steps = sum(a.steps.length or 0 for a in traces if a.steps is not None)
        print(f"{'in ' + unit:<18} {steps:>8} {sum(a.bytes for a in traces):>12,}")


def _profiled(url: str, window: Window, tokens: int, start: str, out: Path, api_key: str | None) -> tuple[float, int, int]:
    spec = ProfileSpec(window=window, output_dir=out, activities=("cpu",), options={"sglang": {"start": start}})
    with session(url, spec, api_key=api_key) as s:
        seconds = _generate(url, tokens, api_key)
    return seconds, sum(a.bytes for a in s.artifacts), int(s.results[0].details["written_bytes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--window", default="40:50")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8, help="concurrent requests of the token-window rows")
    parser.add_argument("--api-key", help="bearer token of a server started with an (admin) API key")
    parser.add_argument("--smoke", action="store_true", help="a tiny run that only checks the script works (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.tokens, args.window, args.repeat, args.batch = 8, "2:4", 1, 3
    window = Window.parse(args.window)
    rows: dict[str, list[tuple[float, int, int]]] = {"unprofiled": [], "relative": [], "trim": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            rows["unprofiled"].append((_generate(args.url, args.tokens, args.api_key), 0, 0))
            for mode in ("relative", "trim"):
                rows[mode].append(_profiled(args.url, window, args.tokens, mode, Path(tmp) / f"{mode}{i}", args.api_key))
    base = statistics.median(row[0] for row in rows["unprofiled"])
    print(f"window {window} of a {args.tokens}-batch request, median of {args.repeat}")
    print(f"{'mode':<11} {'time/unprofiled':>16} {'bytes written':>14} {'bytes kept':>11}")
    for mode, values in rows.items():
        seconds = statistics.median(row[0] for row in values)
        kept = int(statistics.median(row[1] for row in values))
        written = int(statistics.median(row[2] for row in values))
        print(f"{mode:<11} {seconds / base:>16.2f} {written:>14} {kept:>11}")
    with tempfile.TemporaryDirectory() as tmp:
        _tokens(args, window, Path(tmp))


if __name__ == "__main__":
    main()
