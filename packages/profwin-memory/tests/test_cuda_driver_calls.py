"""The order of the CUDA driver's allocator calls, driven by a real profwin.Session.

FAKE (no CUDA device on CPU machines): ``FakeTorch`` stands in for ``torch.cuda`` only. It keeps
an allocation history the way the caching allocator does when ``_record_memory_history`` is on
(entries tagged with the current ``_set_memory_metadata``), and ``_dump_snapshot`` pickles it in
the documented snapshot format. The real allocator is checked by
integration_tests/memory/cuda_check.py on a GPU machine.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

import profwin_memory.profiler
from profwin import ProfileSpec, Session, Window
from profwin_memory import MemoryProfiler, load_snapshot, sidecar_path


class FakeMemory:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.recording = False
        self.metadata = ""
        self.trace: list[dict[str, Any]] = []

    def _record_memory_history(
        self,
        enabled: str | None = "all",
        context: str | None = "all",
        stacks: str = "all",
        max_entries: int = sys.maxsize,
        device: Any = None,
        clear_history: bool = False,
        compile_context: bool = False,
        global_record_annotations: bool = False,
        skip_actions: list[str] | None = None,
    ) -> None:
        kwargs = {"enabled": enabled, "context": context, "stacks": stacks, "max_entries": max_entries}
        self.calls.append(("record", {**kwargs, "clear_history": clear_history}))
        self.recording = enabled is not None
        if clear_history:
            self.trace = []

    def _set_memory_metadata(self, metadata: str) -> None:
        self.calls.append(("metadata", metadata))
        self.metadata = metadata

    def _dump_snapshot(self, filename: str) -> None:
        self.calls.append(("dump", Path(filename).name))
        with open(filename, "wb") as f:
            pickle.dump({"segments": [], "device_traces": [list(self.trace)]}, f)

    def alloc(self, size: int) -> None:
        if self.recording:
            self.trace.append({"action": "alloc", "size": size, "frames": [], "user_metadata": self.metadata})


class FakeCuda:
    def __init__(self) -> None:
        self.memory = FakeMemory()

    def is_available(self) -> bool:
        return True

    def synchronize(self) -> None:
        self.memory.calls.append(("synchronize", None))

    def current_device(self) -> int:
        return 0


class FakeTorch:
    __version__ = "0.0+fake"

    def __init__(self) -> None:
        self.cuda = FakeCuda()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeTorch:
    torch = FakeTorch()
    monkeypatch.setattr(profwin_memory.profiler, "_import_torch", lambda: torch)
    return torch


def run(fake: FakeTorch, tmp_path: Path, window: str, steps: int, **kw: Any) -> Session:
    spec = ProfileSpec(window=Window.parse(window), output_dir=tmp_path, **kw)
    with Session(spec, profiler=MemoryProfiler()) as s:
        for k in range(steps):
            fake.cuda.memory.alloc(1000 + k)
            s.step()
    return s


def test_history_is_on_for_exactly_the_window(fake: FakeTorch, tmp_path: Path) -> None:
    session = run(fake, tmp_path, "2:4", 6, options={"memory": {"max_entries": 7, "stacks": "all"}})
    [artifact] = session.artifacts
    assert artifact.kind == "memory-snapshot"
    assert artifact.steps == Window(2, 4)
    calls = fake.cuda.memory.calls
    on = {"enabled": "all", "context": "all", "stacks": "all", "max_entries": 7, "clear_history": True}
    off = {"enabled": None, "context": "all", "stacks": "all", "max_entries": sys.maxsize, "clear_history": False}
    assert calls == [
        ("record", on),
        ("metadata", "profwin step 2"),
        ("metadata", "profwin step 3"),
        ("synchronize", None),
        ("dump", calls[4][1]),
        ("metadata", ""),
        ("record", off),
    ]
    assert calls[4][1].startswith(f".{artifact.path.name}.")  # dumped under a temporary name
    snapshot = load_snapshot(artifact.path)
    assert [(e["size"], e["user_metadata"]) for e in snapshot["device_traces"][0]] == [
        (1002, "profwin step 2"),
        (1003, "profwin step 3"),
    ]
    assert sidecar_path(artifact.path).exists()


def test_early_close_dumps_what_ran_and_stops_recording(fake: FakeTorch, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="inside window 1:9"):
        session = run(fake, tmp_path, "1:9", 3)
    [artifact] = session.artifacts
    assert artifact.steps == Window(1, 3)
    assert fake.cuda.memory.recording is False
    assert [e["size"] for e in load_snapshot(artifact.path)["device_traces"][0]] == [1001, 1002]


def test_nothing_is_recorded_or_written_before_the_window(fake: FakeTorch, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="never reached"):
        session = run(fake, tmp_path, "5:9", 4)
    assert session.artifacts == []
    assert fake.cuda.memory.calls == []
