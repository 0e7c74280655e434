"""The memory profiler on a real CUDA device: each snapshot covers exactly its window.

Run on a GPU machine from the repository root (about a minute, most of it CUDA start-up)::

    python integration_tests/memory/cuda_check.py

It needs torch with CUDA and attrs (profwin-core's one dependency); profwin itself is taken from
``packages/*/src`` of this checkout, so nothing has to be installed. Extra import paths (e.g. a
copied ``site-packages`` holding attrs) can be given in ``PROFWIN_EXTRA_PATH``; with the device
tool, carry ``.venv/lib/python3.11/site-packages/attr`` and ``.../attrs`` and set
``PROFWIN_EXTRA_PATH=.venv/lib/python3.11/site-packages``. Prints one JSON
line per check and exits 1 if any failed. ``test_cuda.py`` runs the same checks under pytest
(marker ``cuda``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
for extra in reversed([p for p in os.environ.get("PROFWIN_EXTRA_PATH", "").split(os.pathsep) if p]):
    sys.path.insert(0, extra)
for src in sorted((ROOT / "packages").glob("*/src")):
    if str(src) not in sys.path:
        sys.path.append(str(src))

try:
    import torch

    from profwin import ProfileSpec, Session, Window
    from profwin_memory import STEP_METADATA, MemoryProfiler, load_snapshot, summarize_snapshot
except ImportError as exc:
    if __name__ != "__main__":
        raise
    print(json.dumps({"check": "imports", "ok": False, "error": f"{exc} (needs torch with CUDA and attrs)"}))
    sys.exit(2)

MIB = 1 << 20


def size_at(step: int) -> int:
    """A distinct size per step, a multiple of the allocator's 512-byte rounding."""
    return 2 * MIB + 512 * (step + 1) * 3


def run(window: str, steps: int, *, out: Path, options: dict[str, Any] | None = None, **kw: Any) -> Session:
    spec = ProfileSpec(window=Window.parse(window), output_dir=out, options={"memory": options or {}}, **kw)
    keep = []
    with Session(spec, profiler=MemoryProfiler(), rank=kw.get("ranks", (0,))[0]) as s:
        for k in range(steps):
            keep.append(torch.empty(size_at(k), dtype=torch.uint8, device="cuda"))
            s.step()
    return s


def allocs(path: Path) -> list[dict[str, Any]]:
    snapshot = load_snapshot(path)
    return [e for trace in snapshot["device_traces"] for e in trace if e["action"] == "alloc"]


def check_window_is_exact(out: Path) -> dict[str, Any]:
    s = run("3:6", 10, out=out)
    [artifact] = s.artifacts
    assert artifact.kind == "memory-snapshot", artifact
    assert artifact.steps == Window(3, 6), artifact
    assert f"_rank0_pid{os.getpid()}_w3-6." in artifact.path.name, artifact.path.name
    entries = allocs(artifact.path)
    sizes = sorted(e["size"] for e in entries)
    assert sizes == [size_at(k) for k in (3, 4, 5)], f"alloc sizes {sizes}"
    keys = sorted({key for e in entries for key in e})
    tags = {e["size"]: e.get("user_metadata") for e in entries}
    if "user_metadata" in keys:
        assert tags == {size_at(k): f"{STEP_METADATA}{k}" for k in (3, 4, 5)}, tags
    return {"file": artifact.path.name, "bytes": artifact.bytes, "entry_keys": keys, "tags": list(tags.values())}


def check_frees_are_recorded(out: Path) -> dict[str, Any]:
    spec = ProfileSpec(window=Window(1, 3), output_dir=out)
    with Session(spec, profiler=MemoryProfiler()) as s:
        s.step()
        block = torch.empty(size_at(40), dtype=torch.uint8, device="cuda")
        s.step()
        del block
        s.step()
    snapshot = load_snapshot(s.artifacts[0].path)
    actions = [(e["action"], e["size"]) for e in snapshot["device_traces"][0] if e["size"] == size_at(40)]
    assert ("alloc", size_at(40)) in actions, actions
    assert ("free_completed", size_at(40)) in actions, actions
    return {"actions": actions}


def check_early_close(out: Path) -> dict[str, Any]:
    s = run("3:8", 5, out=out)
    [artifact] = s.artifacts
    assert artifact.steps == Window(3, 5), artifact
    sizes = sorted(e["size"] for e in allocs(artifact.path))
    assert sizes == [size_at(3), size_at(4)], f"alloc sizes {sizes}"
    return {"steps": str(artifact.steps)}


def check_failed_step_is_kept(out: Path) -> dict[str, Any]:
    spec = ProfileSpec(window=Window(2, 8), output_dir=out)
    keep = []
    session = Session(spec, profiler=MemoryProfiler())
    try:
        with session as s:
            for k in range(8):
                keep.append(torch.empty(size_at(k), dtype=torch.uint8, device="cuda"))
                if k == 3:
                    raise RuntimeError("boom")
                s.step()
    except RuntimeError:
        pass
    [artifact] = session.artifacts
    sizes = sorted(e["size"] for e in allocs(artifact.path))
    assert artifact.steps == Window(2, 4), artifact.steps
    assert sizes == [size_at(2), size_at(3)], sizes
    return {"steps": str(artifact.steps)}


def check_second_session_starts_clean(out: Path) -> dict[str, Any]:
    run("1:2", 3, out=out)
    spec = ProfileSpec(window=Window(1, 2), output_dir=out)
    keep = []
    with Session(spec, profiler=MemoryProfiler()) as s:
        s.step()
        keep.append(torch.empty(size_at(77), dtype=torch.uint8, device="cuda"))
        s.step()
    sizes = [e["size"] for e in allocs(s.artifacts[0].path)]
    assert sizes == [size_at(77)], sizes
    return {"sizes": sizes}


def check_history_is_off_after_close(out: Path) -> dict[str, Any]:
    run("1:2", 2, out=out)
    late = torch.empty(size_at(99), dtype=torch.uint8, device="cuda")
    traces = torch.cuda.memory._snapshot()["device_traces"]
    assert not [e for t in traces for e in t if e.get("size") == size_at(99)], "recording still on after close"
    del late
    return {}


def check_max_entries_bounds_the_history(out: Path) -> dict[str, Any]:
    s = run("0:20", 20, out=out, options={"max_entries": 4})
    events = [len(t) for t in load_snapshot(s.artifacts[0].path)["device_traces"]]
    assert max(events) <= 4, events
    return {"events_per_device": events}


def check_memory_viz_and_summary(out: Path) -> dict[str, Any]:
    from torch.cuda import _memory_viz

    s = run("2:5", 6, out=out, options={"stacks": "python", "context": "all"})
    path = s.artifacts[0].path
    snapshot = load_snapshot(path)
    html = _memory_viz.trace_plot(snapshot)
    assert "<html" in html.lower() or "MemoryViz" in html, html[:200]
    summary = summarize_snapshot(path)
    [dev] = summary["devices"]
    assert dev["alloc_bytes"] == sum(size_at(k) for k in (2, 3, 4)), dev
    return {
        "per_step": dev["alloc_bytes_per_step"],
        "top_site": dev["top_sites"][0]["site"],
        "html_chars": len(html),
    }


def check_unselected_rank_writes_nothing(out: Path) -> dict[str, Any]:
    spec = ProfileSpec(window=Window(1, 3), output_dir=out, ranks=(1,))
    with Session(spec, profiler=MemoryProfiler(), rank=0) as s:
        for _ in range(4):
            s.step()
    assert s.artifacts == [], s.artifacts
    return {}


CHECKS: dict[str, Callable[[Path], dict[str, Any]]] = {
    name.removeprefix("check_"): fn for name, fn in globals().items() if name.startswith("check_") and callable(fn)
}


def main() -> int:
    if not torch.cuda.is_available():
        print(json.dumps({"check": "cuda", "ok": False, "error": f"torch {torch.__version__}: no CUDA device"}))
        return 1
    work = Path(tempfile.mkdtemp(prefix="profwin-cuda-check-"))
    os.environ["PROFWIN_SNAPSHOT_KEY_FILE"] = str(work / "snapshot.key")
    torch.empty(1, device="cuda")  # CUDA start-up, outside every check
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "out": str(work)}))
    failed = 0
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            details = check(work / name)
            print(json.dumps({"check": name, "ok": True, "s": round(time.perf_counter() - started, 3), **details}))
        except Exception as exc:
            failed += 1
            print(
                json.dumps(
                    {"check": name, "ok": False, "error": f"{type(exc).__name__}: {exc}", "where": traceback.format_exc(limit=3)}
                )
            )
    print(json.dumps({"checks": len(CHECKS), "failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
