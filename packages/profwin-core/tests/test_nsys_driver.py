"""The ``nsys`` profiler: the CUDA profiler API called exactly at the window's edges.

The refusals run against the real torch of this machine (a CPU build: no CUDA device). The call
order uses FAKE CUDA: ``FakeTorch`` stands in for ``torch.cuda`` (``profiler.start``/``stop``,
``nvtx.range_push``/``range_pop``, ``synchronize``) and ``torch.autograd.profiler.emit_nvtx``
only, recording each call, because these machines have no GPU. On a GPU,
integration_tests/nsys/gpu_check.py checks the real calls under ``nsys profile``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import profwin
import profwin.nsys_driver
from profwin import ConfigError, ProfileSpec, Session, Window
from profwin.nsys_driver import NVTX_STEP, NsysProfiler


class FakeEmitNvtx:
    def __init__(self, calls: list[tuple[str, Any]], record_shapes: bool) -> None:
        self.calls = calls
        self.record_shapes = record_shapes

    def __enter__(self) -> FakeEmitNvtx:
        self.calls.append(("emit_nvtx", self.record_shapes))
        return self

    def __exit__(self, *exc: object) -> None:
        self.calls.append(("emit_nvtx_exit", None))


class FakeTorch:
    __version__ = "0.0+fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        calls = self.calls

        class Namespace:
            pass

        self.cuda = Namespace()
        self.cuda.is_available = lambda: True  # type: ignore[attr-defined]
        self.cuda.synchronize = lambda: calls.append(("synchronize", None))  # type: ignore[attr-defined]
        self.cuda.profiler = Namespace()  # type: ignore[attr-defined]
        self.cuda.profiler.start = lambda: calls.append(("start", None))  # type: ignore[attr-defined]
        self.cuda.profiler.stop = lambda: calls.append(("stop", None))  # type: ignore[attr-defined]
        self.cuda.nvtx = Namespace()  # type: ignore[attr-defined]
        self.cuda.nvtx.range_push = lambda name: calls.append(("push", name))  # type: ignore[attr-defined]
        self.cuda.nvtx.range_pop = lambda: calls.append(("pop", None))  # type: ignore[attr-defined]
        self.autograd = Namespace()
        self.autograd.profiler = Namespace()  # type: ignore[attr-defined]
        self.autograd.profiler.emit_nvtx = lambda record_shapes=False: FakeEmitNvtx(calls, record_shapes)  # type: ignore[attr-defined]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeTorch:
    torch = FakeTorch()
    monkeypatch.setattr(profwin.nsys_driver, "_import_torch", lambda: torch)
    return torch


def run(tmp_path: Path, window: str, steps: int, fail_at: int | None = None, **kw: Any) -> Session:
    spec = ProfileSpec(window=Window.parse(window), output_dir=tmp_path, **kw)
    with Session(spec, profiler="nsys") as s:
        for k in range(steps):
            if k == fail_at:
                raise RuntimeError("boom")
            s.step()
    return s


def test_the_capture_range_is_exactly_the_window(fake: FakeTorch, tmp_path: Path) -> None:
    session = run(tmp_path, "2:5", 8)
    assert fake.calls == [
        ("synchronize", None),
        ("start", None),
        ("push", f"{NVTX_STEP}2"),
        ("pop", None),
        ("push", f"{NVTX_STEP}3"),
        ("pop", None),
        ("push", f"{NVTX_STEP}4"),
        ("pop", None),
        ("synchronize", None),
        ("stop", None),
    ]
    [artifact] = session.artifacts
    assert (artifact.kind, artifact.steps, artifact.producer) == ("nsys-capture", Window(2, 5), "nsys")
    note = json.loads(artifact.path.read_text())
    assert (note["window"], note["steps"], note["rank"], note["failed"]) == ("2:5", "2:5", 0, False)
    again = json.loads(run(tmp_path, "0:1", 1).artifacts[0].path.read_text())
    assert again["capture_range"] == note["capture_range"] + 1  # report.N.nsys-rep under --capture-range-end=repeat


def test_an_early_end_and_an_exception_still_stop(fake: FakeTorch, tmp_path: Path) -> None:
    with pytest.warns(profwin.WindowWarning, match="inside window 1:9"):
        session = run(tmp_path, "1:9", 3)
    assert session.artifacts[0].steps == Window(1, 3)
    assert fake.calls[-1] == ("stop", None)
    fake.calls.clear()
    with pytest.raises(RuntimeError, match="boom"):
        run(tmp_path, "0:9", 5, fail_at=2)
    assert [c for c, _ in fake.calls].count("start") == 1
    assert fake.calls[-2:] == [("synchronize", None), ("stop", None)]
    assert fake.calls.count(("push", f"{NVTX_STEP}2")) == 1  # the failed step is in the range


def test_a_window_never_reached_never_starts(fake: FakeTorch, tmp_path: Path) -> None:
    with pytest.warns(profwin.WindowWarning, match="never reached"):
        session = run(tmp_path, "5:9", 3)
    assert session.artifacts == []
    assert fake.calls == []


def test_ops_are_nvtx_ranges_with_shapes_on_request(fake: FakeTorch, tmp_path: Path) -> None:
    run(tmp_path, "0:1", 2, shapes=True, options={"nsys": {"ops": True}})
    assert ("emit_nvtx", True) in fake.calls
    assert fake.calls.index(("emit_nvtx_exit", None)) < fake.calls.index(("stop", None))


def test_refused_without_cuda_before_anything_starts(tmp_path: Path) -> None:
    """With the real torch of this machine (these machines have no CUDA device)."""
    import torch

    spec = ProfileSpec(window=Window(0, 2), output_dir=tmp_path / "out")
    if torch.cuda.is_available():  # a GPU machine: the check passes, and nothing is opened by it
        assert NsysProfiler().check(spec) == spec
        return
    with pytest.raises(ConfigError, match=r"profiler: the nsys profiler needs a CUDA device: .*is_available\(\) == False"):
        Session(spec, profiler="nsys").start()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"activities": ["cuda"]}, r"activities: nsys chooses what it traces itself"),
        ({"stack": True}, r"stack: is a torch\.profiler setting"),
        ({"memory": True}, r"memory: is a torch\.profiler setting"),
        ({"shapes": True}, r"shapes: is recorded by the nsys profiler only with options\.nsys\.ops: true"),
        ({"options": {"nsys": {"ops": "yes"}}}, r"options\.nsys\.ops: must be true or false"),
        ({"options": {"nsys": {"op": True}}}, r"options\.nsys: unknown key 'op'"),
    ],
)
def test_spec_errors_name_the_field(fake: FakeTorch, tmp_path: Path, kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        NsysProfiler().check(ProfileSpec(window=Window(0, 2), output_dir=tmp_path, **kw))
