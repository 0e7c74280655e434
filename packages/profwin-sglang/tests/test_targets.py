"""The HTTP client's own wire behaviour against a local stdlib HTTP server on 127.0.0.1.

The server here (the suite's ``stub_server``) only stands in for *transport* (status codes, headers, silence); what SGLang
itself answers is checked against a real SGLang server in integration_tests/sglang.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from profwin import TargetError
from profwin.plugin.engines import TargetContext
from profwin_sglang.targets import ServerInfo, SglangServer

CTX = TargetContext(timeout=5)


REPLIES: dict[str, tuple[int, bytes]] = {}
"""What the stub answers each path with (default 200 "ok"); reset for every test."""


@pytest.fixture
def server(stub_server: Any) -> Any:
    """The root conftest's stub server, answering from REPLIES; ``/slow...`` answers after 3 s."""
    REPLIES.clear()

    def answer(request: Any) -> tuple[int, bytes]:
        if request.path.startswith("/slow"):
            time.sleep(3)
        return REPLIES.get(request.path, (200, b"ok"))

    return stub_server(answer)


def test_server_errors_say_what_happened(server: Any) -> None:
    REPLIES["/start_profile"] = (401, b'{"error": "Unauthorized"}')
    with pytest.raises(TargetError, match=r"returned 401.*API key") as info:
        SglangServer(server.address, timeout=5).send_start({"num_steps": 5}, CTX)
    assert info.value.details["status"] == 401
    seen = server.seen[-1]
    assert (seen.method, seen.path, seen.auth, seen.json()) == ("POST", "/start_profile", None, {"num_steps": 5})


@pytest.mark.parametrize("body", [b"Internal Server Error", b"RuntimeError: Profiling is not in progress."])
def test_stop_not_in_progress(server: Any, body: bytes) -> None:
    REPLIES["/stop_profile"] = (500, body)
    assert SglangServer(server.address, timeout=5).send_stop(CTX) is False


def test_stop_other_errors_raise(server: Any) -> None:
    REPLIES["/stop_profile"] = (500, b"CUDA error: device lost")
    with pytest.raises(TargetError, match="device lost"):
        SglangServer(server.address, timeout=5).send_stop(CTX)


def test_info_falls_back_to_get_server_info(server: Any) -> None:
    REPLIES["/server_info"] = (404, b"Not Found")
    REPLIES["/get_server_info"] = (200, json.dumps({"version": "0.5.10", "device": "cuda"}).encode())
    assert SglangServer(server.address, timeout=5).info(CTX) == ServerInfo(version="0.5.10", device="cuda", plugin=False)


def test_start_timeout_names_the_known_hang(server: Any) -> None:
    began = time.monotonic()
    target = SglangServer(server.address + "/slow", timeout=0.5)  # POST .../slow/start_profile: answered after 3 s
    with pytest.raises(TargetError, match=r"within 0\.5 s.*SGLang #22083"):
        target.send_start({}, CTX)
    assert time.monotonic() - began < 2.5


def test_already_in_progress_is_busy(server: Any) -> None:
    from profwin import EngineBusy

    REPLIES["/start_profile"] = (400, b"Profiling is already in progress. Call /stop_profile first.")
    with pytest.raises(EngineBusy):
        SglangServer(server.address, timeout=5).send_start({}, CTX)
