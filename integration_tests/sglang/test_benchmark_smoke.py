"""benchmarks/sglang_window_cost.py runs (smoke size) against a live SGLang server with the plugin."""

from __future__ import annotations

from ..test_benchmarks import run_smoke
from .conftest import ADMIN_KEY, Server


def test_sglang_window_cost(plugin_server: Server) -> None:
    out = run_smoke("sglang_window_cost.py", "--url", plugin_server.url, "--api-key", ADMIN_KEY)
    assert "window 2:4 of a 8-batch request, median of 1" in out
    assert "relative" in out
    assert "token windows: a batch of 3 requests" in out
    assert "in tokens" in out
