"""A real decode loop: the KV cache's growth shows exactly the window's steps."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from profwin import ProfileSpec, Session, Window  # noqa: E402
from profwin.demo import TinyDecoder  # noqa: E402
from profwin_memory import load_timeline  # noqa: E402

pytestmark = pytest.mark.torch


def test_kv_cache_allocations_of_each_window_step(tmp_path: Path) -> None:
    dim, layers = 64, 3
    model = TinyDecoder(vocab=100, dim=dim, layers=layers, heads=4)
    spec = ProfileSpec(window=Window(5, 9), output_dir=tmp_path, activities=("cpu",))
    with Session(spec, profiler="memory") as s:
        model.generate(12, on_step=lambda i: s.step())
    timeline = load_timeline(s.artifacts[0].path)
    ops = timeline["ops"]
    events = timeline["events"]
    cat_sizes = Counter(
        (step, nbytes)
        for step, nbytes, op in zip(events["step"], events["bytes"], events["op"], strict=True)
        if nbytes > 0 and ops[op] == "aten::cat"
    )
    # Step k appends to a cache of k tokens: torch.cat makes keys and values of (k+1) tokens,
    # float32, per layer. Nothing from steps 0-4 or 9-11 appears.
    assert cat_sizes == Counter({(k, 4 * dim * (k + 1)): 2 * layers for k in range(5, 9)})
    assert timeline["per_step"]["step"] == [5, 6, 7, 8]
    assert all(count > 0 for count in timeline["per_step"]["alloc_count"])
