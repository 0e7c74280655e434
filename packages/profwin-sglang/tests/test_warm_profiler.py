"""The server plugin's profiler warm-up: once per process, nothing left running or left to the
garbage collector, never during a profile."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest

from profwin_sglang import server_plugin

torch = pytest.importorskip("torch", reason="the warm-up runs torch's profiler (scripts/bootstrap.sh installs a CPU build)")

pytestmark = pytest.mark.torch


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_plugin, "_warmed", False)


@pytest.mark.usefixtures("fresh_process")
def test_warms_once_and_leaves_no_profiler_running() -> None:
    manager = SimpleNamespace(profile_in_progress=False)
    took = server_plugin.warm_profiler(manager)
    assert took is not None
    assert took > 0
    assert not torch.autograd._profiler_enabled()
    assert server_plugin.warm_profiler(manager) is None  # the process is warm: nothing more to pay
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:  # a real session still works
        torch.ones(2).mul_(2)
    assert any(e.name == "aten::mul_" for e in prof.events())


@pytest.mark.usefixtures("fresh_process")
def test_leaves_no_profiler_object_for_a_later_collection() -> None:
    """torch's profiler objects are reference cycles: the warm-up's must be gone when it returns,
    not destroyed by some later collection, perhaps inside the next session's stop."""
    gc.collect()
    assert server_plugin.warm_profiler(SimpleNamespace(profile_in_progress=False)) is not None
    assert gc.isenabled()
    classes = (torch.profiler.profile, torch.autograd.profiler.profile)
    left = [o for o in gc.get_objects() if type(o) in classes]  # type(): no attribute read on foreign objects
    assert left == []


@pytest.mark.usefixtures("fresh_process")
def test_never_starts_a_second_profiler() -> None:
    assert server_plugin.warm_profiler(SimpleNamespace(profile_in_progress=True)) is None
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        assert server_plugin.warm_profiler(SimpleNamespace(profile_in_progress=False)) is None
    assert not torch.autograd._profiler_enabled()
