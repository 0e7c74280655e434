"""The demo: a tiny decoder generating tokens on CPU, with a window of its steps profiled.

The model is built in torch from a fixed seed (nothing is downloaded): token embedding,
``layers`` pre-norm transformer blocks with a KV cache, and an output head. One call of
:meth:`TinyDecoder.decode_step` is one generation step.
"""

from __future__ import annotations

import collections
import gzip
import json
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from attrs import frozen

from profwin.json_form import JsonForm, to_json
from profwin.protocols import Artifact
from profwin.provenance import PROVENANCE_FORMAT, PROVENANCE_KEY, new_session_id, profwin_version
from profwin.session import Session, current_rank
from profwin.spec import ProfileSpec
from profwin.torch_driver import STEP_MARKER, import_torch, inductor_left_alone
from profwin.window import Window

__all__ = ["DemoResult", "TinyDecoder", "count_step_markers", "run_demo", "run_full_trace", "warm_up_profiler"]


class TinyDecoder:
    """A deterministic few-layer decoder with a KV cache, sized to run a step in ~1 ms on CPU.

    The cache holds the last ``context`` positions (a sliding window, like a real model's
    context length): memory and the cost of a step stay flat however many steps run. An
    unbounded cache grew by about 2 KB a step and was copied whole at every step, which is what
    took ``profwin demo --steps 2147483647`` to gigabytes before anyone stopped it.
    """

    def __init__(
        self, *, vocab: int = 512, dim: int = 128, layers: int = 2, heads: int = 4, seed: int = 0, context: int = 256
    ) -> None:
        torch = import_torch()
        self.context = context
        self.torch = torch
        gen = torch.Generator().manual_seed(seed)

        def weight(*shape: int) -> Any:
            return torch.randn(*shape, generator=gen) / shape[0] ** 0.5

        self.heads, self.dim = heads, dim
        self.embed = weight(vocab, dim)
        self.blocks = [
            {
                "qkv": weight(dim, 3 * dim),
                "out": weight(dim, dim),
                "up": weight(dim, 4 * dim),
                "down": weight(4 * dim, dim),
            }
            for _ in range(layers)
        ]
        self.head = weight(dim, vocab)
        self.reset()

    def reset(self) -> None:
        self.cache: list[tuple[Any, Any]] = [
            (
                self.torch.empty(self.heads, 0, self.dim // self.heads),
                self.torch.empty(self.heads, 0, self.dim // self.heads),
            )
            for _ in self.blocks
        ]

    def decode_step(self, token: int) -> int:
        """Append ``token`` and return the greedy next token."""
        torch, f = self.torch, self.torch.nn.functional
        x = self.embed[token]
        for i, block in enumerate(self.blocks):
            h = f.layer_norm(x, (self.dim,))
            q, k, v = (h @ block["qkv"]).view(3, self.heads, 1, self.dim // self.heads)
            keys, values = self.cache[i]
            keys, values = torch.cat([keys, k], dim=1), torch.cat([values, v], dim=1)
            self.cache[i] = (keys[:, -self.context :], values[:, -self.context :])
            attn = f.scaled_dot_product_attention(q, keys, values)
            x = x + attn.reshape(self.dim) @ block["out"]
            x = x + f.gelu(f.layer_norm(x, (self.dim,)) @ block["up"]) @ block["down"]
        return int((f.layer_norm(x, (self.dim,)) @ self.head).argmax())

    def generate(
        self,
        steps: int,
        *,
        on_step: Callable[[int], None] | None = None,
        around_step: Callable[[int], AbstractContextManager[Any]] | None = None,
    ) -> list[int]:
        """Run ``steps`` decode steps from token 1; ``on_step(i)`` is called after step ``i``,
        and step ``i`` runs inside ``around_step(i)`` when given. Returns the last ``context``
        tokens generated (all of them for a short run)."""
        self.reset()
        with self.torch.inference_mode():
            token, out = 1, collections.deque[int](maxlen=self.context)
            for i in range(steps):
                with around_step(i) if around_step is not None else nullcontext():
                    token = self.decode_step(token)
                out.append(token)
                if on_step is not None:
                    on_step(i)
        return list(out)


def count_step_markers(path: Path) -> list[int]:
    """The ``ProfilerStep#k`` numbers found in a Chrome trace (``.json`` or ``.json.gz``), one per
    step: the host's markers, not the copies Kineto adds on the GPU's lanes (``gpu_user_annotation``),
    which an H200's trace holds for every step."""
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        events = json.load(f).get("traceEvents", [])
    return sorted(
        int(e["name"][len(STEP_MARKER) :])
        for e in events
        if isinstance(e.get("name"), str)
        and e["name"].startswith(STEP_MARKER)
        and e.get("ph") == "X"
        and e.get("cat") != "gpu_user_annotation"
    )


@frozen(kw_only=True)
class DemoResult(JsonForm):
    """What one demo run did: steps run, files written, wall time."""

    label: str
    steps_run: int
    wall_s: float
    artifacts: tuple[Artifact, ...]
    recorded_steps: tuple[int, ...]
    reason: str | None = None
    """Why nothing was recorded (the session's :attr:`~profwin.Session.nothing_recorded`); ``None`` when something was."""

    @property
    def trace_bytes(self) -> int:
        return sum(a.bytes for a in self.artifacts)

    def to_dict(self) -> dict[str, Any]:
        """``profwin demo --json``: the fields, with the recorded steps as a count and first/last."""
        return {
            **to_json(self, exclude=("recorded_steps",)),
            "wall_s": round(self.wall_s, 4),
            "steps_recorded": len(self.recorded_steps),
            "recorded": [self.recorded_steps[0], self.recorded_steps[-1]] if self.recorded_steps else None,
            "trace_bytes": self.trace_bytes,
        }


class _Progress:
    """A one-line progress display on a TTY; a plain line every 25% otherwise."""

    def __init__(self, total: int, label: str, *, stream: Any = None) -> None:
        self.total, self.label = total, label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.marks = {max(1, round(total * q / 4)) for q in (1, 2, 3, 4)}

    def __call__(self, i: int) -> None:
        done = i + 1
        if self.tty:
            if done == self.total or done % 5 == 0:
                end = "\n" if done == self.total else ""
                self.stream.write(f"\r{self.label}: step {done}/{self.total}{end}")
                self.stream.flush()
        elif done in self.marks:
            self.stream.write(f"{self.label}: step {done}/{self.total}\n")


def warm_up_profiler() -> None:
    """Pay torch.profiler's one-time per-process initialisation (Kineto's, a few ms on CPU: torch's
    import of inductor is avoided, :func:`~profwin.torch_driver.inductor_left_alone`) now, so
    that timed runs compared side by side all measure the steady state."""
    torch = import_torch()
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU])
    with inductor_left_alone(torch):
        prof.start()
    prof.stop()


def run_demo(
    spec: ProfileSpec, *, steps: int, label: str = "windowed", progress: bool = True, model: TinyDecoder | None = None
) -> DemoResult:
    """Generate ``steps`` tokens with ``spec``'s window profiled by a :class:`profwin.Session`.

    The wall time covers the session (open, generation, close and trace export), not building
    the model.
    """
    model = model or TinyDecoder()
    report = _Progress(steps, label) if progress else None
    started = time.perf_counter()
    with Session(spec, profiler="torch") as session:

        def on_step(i: int) -> None:
            session.step()
            if report is not None:
                report(i)

        model.generate(steps, on_step=on_step)
    wall = time.perf_counter() - started
    recorded = tuple(k for a in session.artifacts for k in count_step_markers(a.path))
    return DemoResult(
        label=label,
        steps_run=session.steps,
        wall_s=wall,
        artifacts=tuple(session.artifacts),
        recorded_steps=recorded,
        reason=session.nothing_recorded,
    )


def run_full_trace(spec: ProfileSpec, *, steps: int, progress: bool = True, model: TinyDecoder | None = None) -> DemoResult:
    """The same generation under a plain ``torch.profiler.profile`` over the whole run (what
    users do without profwin), exported the same way, for comparison.

    Each step is marked ``ProfilerStep#k`` as torch.profiler marks the steps of a scheduled run,
    and the trace carries its provenance (this process's rank, as the windowed trace's), so
    ``profwin summarize``, ``diff`` and ``trim`` read it by step like the windowed one."""
    torch = import_torch()  # a clear error when torch is missing
    from torch.profiler import ProfilerActivity, profile, record_function

    model = model or TinyDecoder()
    report = _Progress(steps, "full-run") if progress else None
    spec.prepare_output_dir()
    path = spec.output_dir / f"{spec.prefix}_full_{steps}steps.pt.trace.json.gz"
    started = time.perf_counter()
    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=spec.shapes, with_stack=spec.stack)
    with inductor_left_alone(torch):
        prof.start()
    try:

        def on_step(i: int) -> None:
            if report is not None:
                report(i)

        model.generate(steps, on_step=on_step, around_step=lambda i: record_function(f"{STEP_MARKER}{i}"))
        origin = {"window": f"0:{steps}", "steps": f"0:{steps}", "first_step": 0, "engine": "torch",
                  "engine_version": str(torch.__version__), "producer": "torch.profiler (whole run)", "rank": current_rank(),
                  "session": new_session_id(), "version": profwin_version()}  # fmt: skip
        prof.add_metadata_json(PROVENANCE_KEY, json.dumps(PROVENANCE_FORMAT.stamp(origin)))
    finally:
        prof.stop()
    prof.export_chrome_trace(str(path))
    wall = time.perf_counter() - started
    artifact = Artifact(
        path=path, steps=Window(0, steps), bytes=path.stat().st_size, kind="trace", producer="torch.profiler (whole run)"
    )
    return DemoResult(
        label="full-run", steps_run=steps, wall_s=wall, artifacts=(artifact,), recorded_steps=tuple(count_step_markers(path))
    )
