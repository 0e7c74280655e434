"""Shared helpers for profwin-core tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from profwin import ProfileSpec, Session, Window


def _run_loop(spec: ProfileSpec, steps: int, *, fail_at: int | None = None, exc: type[BaseException] = ValueError) -> Session:
    """Run a real torch loop of ``steps`` steps under a Session; raise ``exc`` inside step ``fail_at``."""
    import torch

    with Session(spec, profiler="torch") as session:
        for i in range(steps):
            torch.randn(16, 16).matmul(torch.randn(16, 16)).sum()
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
