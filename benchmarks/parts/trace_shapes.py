"""The trace shapes of ``traces_bench.py``: real traces, each tiled to the size asked for.

A shape is one real template trace and the steps of it to repeat. Three templates are recorded
when the benchmark runs, with profwin's torch driver on CPU (:func:`record_templates`, in a child
process: torch is imported there only); three are real traces kept in the repository
(``integration_tests/traces/data``: an NVIDIA H200 trace, and CPU traces of vLLM 0.32.0 and
SGLang 0.5.23 serving the tests' tiny Llama, cut to a few steps by ``profwin trim`` and stripped of
its ``"profwin"`` key, so the events are the engines' bytes).

:func:`tile` copies a block of the template's steps over and over at later times: each event's
own text (the engine's layout, byte for byte) with its ``ts`` moved, its step number (torch's
``ProfilerStep#k``) renumbered, and its correlation and flow ids made unique per copy, so that
launches still pair with their kernels and flows with their ends. Events are written in the
template's order of sections, as Kineto writes them: all host events, then the Python functions,
then the device activities, then the GPU-side step annotations.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "integration_tests" / "traces" / "data"


@dataclass(frozen=True)
class Shape:
    """A template and the block of its host step markers to repeat: markers ``[first, end)``,
    the block's period running from marker ``first`` to marker ``end``."""

    name: str
    about: str
    template: str
    """A file under :data:`DATA`, or ``recorded:<kind>`` (:func:`record_templates`)."""
    marker: str
    """The producer's step marker, a regular expression matched at the start of a name (a group: the step number)."""
    first: int
    end: int


TORCH = r"ProfilerStep#(\d+)$"
SHAPES = {
    s.name: s
    for s in (
        Shape("synthetic", "the benchmark's former only shape: the decoder with shapes and a made-up GPU lane",
              "recorded:synthetic", TORCH, 0, 1),
        Shape("torch", "profwin's own torch-driver trace (profwin.Session, default spec) of a tiny decoder",
              "recorded:torch", TORCH, 0, 1),
        Shape("cpu-args", "a training step with record_shapes: Kineto's usual args on every operator "
              "(External id, Input Dims, Sequence number...), about 300 operators a step", "recorded:cpu-args", TORCH, 0, 1),
        Shape("gpu", "an NVIDIA H200 trace: kernels, launches, flows, memcpy, memset, GPU step annotations",
              "h200_rank0.pt.trace.json.gz", TORCH, 1, 4),
        Shape("vllm", "vLLM 0.32.0 on CPU with its default profiler config (Python stacks on), decode steps of 8 requests",
              "vllm_0.32.0_cpu_rank0.pt.trace.json.gz", r"execute_(?:\d+_)?context_", 0, 1),
        Shape("sglang", "SGLang 0.5.23 on CPU with record_shapes, an EXTEND and a DECODE step of 7 requests",
              "sglang_0.5.23_cpu-TP-0.trace.json.gz", r"step\[[A-Z_]+\b", 0, 2),
    )
}  # fmt: skip

_DEVICE = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "ac2g"})
_WORK = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
_TS = re.compile(r'"ts": -?[0-9.eE+-]+')
_CORRELATION = re.compile(r'("correlation": )(\d+)')
_FLOW_ID = re.compile(r'(?<=[{,\s])("id": )(\d+)')
_STEP_NUMBER = re.compile(r"ProfilerStep#\d+")


def _section(event: dict[str, Any]) -> str:
    cat = event.get("cat")
    if cat in _DEVICE:
        return "device"
    if cat == "gpu_user_annotation":
        return "gpu annotations"
    return "python" if cat == "python_function" else "host"


def _read(path: Path) -> tuple[str, list[tuple[dict[str, Any], int, int]]]:
    """The template's text and its events with where each one's text is (profwin's reader)."""
    sys.path[:0] = [str(ROOT / "packages" / p / "src") for p in ("profwin-core", "profwin-traces")]
    from profwin_traces.reader import read_trace

    opener: Any = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    with read_trace(path, fast=False) as reader:
        events = list(reader.raw_events())
    return text, events


def _slots(text: str, markers: dict[str, int]) -> str:
    """An event's text as a format string: ``{ts}`` for its time, ``{k}`` (the copy) before its
    correlation and flow ids, ``{n[i]}`` for the number of the block's step ``i``."""
    text = text.replace("{", "{{").replace("}", "}}")
    text = _TS.sub('"ts": {ts:.3f}', text, count=1)
    text = _CORRELATION.sub(lambda m: f"{m.group(1)}{{k}}{int(m.group(2)):08d}", text)
    text = _FLOW_ID.sub(lambda m: f"{m.group(1)}{{k}}{int(m.group(2)):08d}", text)
    return _STEP_NUMBER.sub(lambda m: f"ProfilerStep#{{n[{markers[m.group(0)]}]}}" if m.group(0) in markers else m.group(0), text)


def tile(template: Path, out: Path, shape: Shape, *, size_mb: float) -> dict[str, Any]:
    """Write a ~``size_mb`` MiB trace repeating ``shape``'s block of steps of ``template``."""
    text, events = _read(template)
    marker = re.compile(shape.marker)
    hosts = sorted(
        (e for e, _, _ in events
         if e.get("ph") == "X" and marker.match(str(e.get("name", ""))) and not str(e.get("cat", "")).startswith("gpu_")),
        key=lambda e: e["ts"],
    )  # fmt: skip
    block = hosts[shape.first : shape.end]
    t0, t1 = block[0]["ts"], hosts[shape.end]["ts"]
    numbers = {e["name"]: i for i, e in enumerate(block)}  # ProfilerStep#k -> its place in the block

    def timed(e: dict[str, Any]) -> bool:
        ts = e.get("ts")
        return isinstance(ts, (int, float)) and t0 <= ts < t1

    args = lambda e: e.get("args") if isinstance(e.get("args"), dict) else {}  # noqa: E731
    launches = {args(e).get("correlation") for e, _, _ in events if e.get("cat") in _DEVICE - _WORK and timed(e)}
    flows = {e.get("id") for e, _, _ in events if e.get("ph") == "s" and timed(e)}

    def in_block(e: dict[str, Any]) -> bool:
        cat = e.get("cat")
        if cat in _WORK:  # device work belongs with its launch, which may be a step earlier
            return args(e).get("correlation") in launches
        if e.get("ph") == "f":
            return e.get("id") in flows
        if cat == "gpu_user_annotation":
            return e.get("name") in numbers
        return timed(e)

    metadata = [text[o : o + n] for e, o, n in events if e.get("ph") == "M"]
    sections: dict[str, list[tuple[str, float]]] = {}
    for e, o, n in events:
        if e.get("ph") != "M" and in_block(e):
            sections.setdefault(_section(e), []).append((_slots(text[o : o + n], numbers), e["ts"] - t0))
    first_o = events[0][1]
    _, last_o, last_n = events[-1]
    separator = text[events[0][1] + events[0][2] : events[1][1]] if len(events) > 1 else ",\n  "
    per_block = sum(len(fmt) + 2 for part in sections.values() for fmt, _ in part)
    copies = max(3, int(size_mb * 2**20 / per_block))
    period = t1 - t0
    steps = len(block)
    tmp = out.with_name(out.name + ".partial")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text[:first_o])
        f.write(separator.join(metadata))
        for section, part in sections.items():
            # Kineto writes the GPU-side step annotations last step first, as the template has them.
            for k in reversed(range(copies)) if section == "gpu annotations" else range(copies):
                base = t0 + k * period
                ids = str(k + 1)
                n = [k * steps + i for i in range(steps)]
                f.write(separator)
                f.write(separator.join(fmt.format(ts=base + offset, k=ids, n=n) for fmt, offset in part))
        f.write(text[last_o + last_n :])
    tmp.replace(out)
    count = len(metadata) + copies * sum(len(p) for p in sections.values())
    return {"steps": copies * steps, "events": count, "bytes": out.stat().st_size}


# -- the templates recorded here, with real torch on CPU ---------------------------------------


def record_templates(out_dir: Path) -> dict[str, str]:
    """Record the ``recorded:`` templates with profwin's torch driver; their paths by kind."""
    import torch

    import profwin

    torch.manual_seed(0)
    found: dict[str, str] = {}

    def record(kind: str, step: Any, **options: Any) -> None:
        spec = profwin.ProfileSpec(
            window=profwin.Window(2, 5), output_dir=out_dir / kind, options={"torch": {"format": "json"}}, **options
        )
        with profwin.Session(spec) as session:
            for _ in range(6):
                step()
                session.step()
        found[kind] = str(session.artifacts[0].path)

    decode = _decoder(torch)
    with torch.inference_mode():
        record("synthetic", decode, shapes=True)
        record("torch", decode)
    record("cpu-args", _training_step(torch), shapes=True)
    found["synthetic"] = str(_with_gpu_lane(Path(found["synthetic"])))
    return found


def _decoder(torch: Any) -> Any:
    """One decode step of a tiny two-layer transformer with a KV cache."""
    dim, heads, vocab = 128, 4, 512
    embed = torch.randn(vocab, dim)
    layers = [
        {"qkv": torch.nn.Linear(dim, 3 * dim), "out": torch.nn.Linear(dim, dim),
         "up": torch.nn.Linear(dim, 4 * dim), "down": torch.nn.Linear(4 * dim, dim)}
        for _ in range(2)
    ]  # fmt: skip
    head = torch.nn.Linear(dim, vocab)
    cache: list[list[Any]] = [[torch.empty(heads, 0, dim // heads), torch.empty(heads, 0, dim // heads)] for _ in layers]
    token = [1]

    def step() -> None:
        f = torch.nn.functional
        x = embed[token[0]]
        for i, layer in enumerate(layers):
            q, k, v = layer["qkv"](f.layer_norm(x, (dim,))).view(3, heads, 1, dim // heads)
            cache[i][0] = torch.cat([cache[i][0], k], dim=1)
            cache[i][1] = torch.cat([cache[i][1], v], dim=1)
            attn = f.scaled_dot_product_attention(q, cache[i][0], cache[i][1])
            x = x + layer["out"](attn.reshape(dim))
            x = x + layer["down"](f.gelu(layer["up"](f.layer_norm(x, (dim,)))))
        token[0] = int(head(f.layer_norm(x, (dim,))).argmax())

    return step


def _training_step(torch: Any) -> Any:
    """One training step (forward, backward, AdamW) of a small MLP: autograd gives operators
    their ``Sequence number`` and ``Fwd thread id`` and the forward-backward flows."""
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.GELU(), torch.nn.Linear(64, 8))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 64), torch.randint(0, 8, (16,))

    def step() -> None:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


_KERNEL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::_softmax", "aten::native_layer_norm", "aten::gelu")


def _with_gpu_lane(path: Path) -> Path:
    """The former benchmark's trace: each of the decoder's matrix and norm operators launches a
    kernel on stream 7 of device 0 (a ``cudaLaunchKernel`` inside the operator, the kernel 40 us
    later and their ``ac2g`` flow pair), written after the host events as Kineto does."""
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X" and e.get("name") in _KERNEL_OPS]
    lane = []
    for n, op in enumerate(ops):
        correlation = 700000 + n
        launch_ts = op["ts"] + op.get("dur", 0.0) / 2
        kernel_ts = launch_ts + 40.0
        name = "void at::native::" + op["name"].split("::")[-1] + "_kernel<float, 128, 4>(float const*, float*, int)"
        lane += [
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": op["pid"], "tid": op["tid"],
             "ts": launch_ts, "dur": 4.2, "args": {"cbid": 211, "correlation": correlation}},
            {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": kernel_ts, "dur": 11.5,
             "args": {"correlation": correlation, "device": 0, "stream": 7, "grid": [108, 1, 1], "block": [128, 1, 1],
                      "registers per thread": 32}},
            {"ph": "s", "id": correlation, "pid": op["pid"], "tid": op["tid"], "ts": launch_ts, "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": correlation, "pid": 0, "tid": 7, "ts": kernel_ts, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        ]  # fmt: skip
    events += lane
    events += [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
    ]
    out = path.with_name("gpu-lane." + path.name)
    # Kineto's layout: two-space indented events inside the array.
    body = ",\n  ".join("\n  ".join(json.dumps(e, indent=2).splitlines()) for e in events)
    head = {k: v for k, v in trace.items() if k != "traceEvents"}
    out.write_text(json.dumps(head, indent=2)[:-2] + ',\n  "traceEvents": [\n  ' + body + "\n  ]\n}\n")
    return out


def template_path(shape: Shape, recorded: dict[str, str]) -> Path:
    kind = shape.template.removeprefix("recorded:")
    return Path(recorded[kind]) if shape.template.startswith("recorded:") else DATA / shape.template
