"""Shared helpers for profwin-core tests."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, Session, Window


def _run_loop(
    spec: ProfileSpec, steps: int, *, fail_at: int | None = None, exc: type[BaseException] = ValueError, device: str = "cpu"
) -> Session:
    """Run a real torch loop of ``steps`` steps (on ``device``) under a Session; raise ``exc``
    inside step ``fail_at``."""
    import torch

    with Session(spec, profiler="torch") as session:
        for i in range(steps):
            torch.randn(16, 16, device=device).matmul(torch.randn(16, 16, device=device)).sum()
            if i == fail_at:
                raise exc(f"boom at step {i}")
            session.step()
    return session


@pytest.fixture
def spec_in(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Build a spec writing into this test's directory."""

    def make(window: str, **kwargs: object) -> ProfileSpec:
        return ProfileSpec(window=Window.parse(window), output_dir=tmp_path, **kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture
def run_loop():  # type: ignore[no-untyped-def]
    """The real-torch loop runner (a fixture because tests are imported with importlib)."""
    return _run_loop


TOY = Path(__file__).parent / "example_backend"


@pytest.fixture
def toy_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """profwin-toy (docs/plugins.md's example backend) installed as a distribution (a
    ``*.dist-info`` on sys.path), like a wheel."""
    info = tmp_path / "site" / "profwin_toy-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: profwin-toy\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[profwin.backends]\ntoy = profwin_toy._plugin:PLUGIN\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.setattr("profwin.discovery._loaded", {})
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("profwin_toy")]:
        del sys.modules[name]


@pytest.fixture
def toy_engines(tmp_path: Path, stub_server: Any) -> Callable[[int], list[Any]]:
    """``toy_engines(n)``: ``n`` toyserve engines on 127.0.0.1 sharing ``tmp_path/traces``."""
    sys.path.insert(0, str(TOY))
    try:
        from toy_engine import ToyEngine
    finally:
        sys.path.remove(str(TOY))
    traces = tmp_path / "traces"
    traces.mkdir()
    return lambda n: [ToyEngine(traces, stub_server) for _ in range(n)]


@pytest.fixture
def engine(toy_engines: Callable[[int], list[Any]]) -> Any:
    """One toyserve engine on 127.0.0.1."""
    return toy_engines(1)[0]
