"""The HTTP client's own wire behaviour against a local stdlib HTTP server on 127.0.0.1.

The server here only stands in for *transport* (status codes, headers, silence); what SGLang
itself answers is checked against a real SGLang server in integration_tests/sglang.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from profwin import TargetError
from profwin.plugin import TargetContext
from profwin_sglang.targets import ServerInfo, SglangServer

CTX = TargetContext(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, str | None, bytes]]] = []
    replies: ClassVar[dict[str, tuple[int, bytes]]] = {}

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append((self.command, self.path, self.headers.get("Authorization"), body))
        if self.path.startswith("/slow"):
            time.sleep(3)
        status, text = self.replies.get(self.path, (200, b"ok"))
        self.send_response(status)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    _Handler.replies = {}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_server_errors_say_what_happened(server: str) -> None:
    _Handler.replies["/start_profile"] = (401, b'{"error": "Unauthorized"}')
    with pytest.raises(TargetError, match=r"returned 401.*API key") as info:
        SglangServer(server, timeout=5).send_start({"num_steps": 5}, CTX)
    assert info.value.details["status"] == 401
    method, path, auth, body = _Handler.seen[-1]
    assert (method, path, auth, json.loads(body)) == ("POST", "/start_profile", None, {"num_steps": 5})


@pytest.mark.parametrize("body", [b"Internal Server Error", b"RuntimeError: Profiling is not in progress."])
def test_stop_not_in_progress(server: str, body: bytes) -> None:
    _Handler.replies["/stop_profile"] = (500, body)
    assert SglangServer(server, timeout=5).send_stop(CTX) is False


def test_stop_other_errors_raise(server: str) -> None:
    _Handler.replies["/stop_profile"] = (500, b"CUDA error: device lost")
    with pytest.raises(TargetError, match="device lost"):
        SglangServer(server, timeout=5).send_stop(CTX)


def test_info_falls_back_to_get_server_info(server: str) -> None:
    _Handler.replies["/server_info"] = (404, b"Not Found")
    _Handler.replies["/get_server_info"] = (200, json.dumps({"version": "0.5.10", "device": "cuda"}).encode())
    assert SglangServer(server, timeout=5).info(CTX) == ServerInfo(version="0.5.10", device="cuda", plugin=False)


def test_start_timeout_names_the_known_hang(server: str) -> None:
    began = time.monotonic()
    target = SglangServer(server, timeout=0.5)
    target.name += "/slow"  # POST .../slow/start_profile: unknown path, answered after 3 s
    with pytest.raises(TargetError, match=r"within 0\.5 s.*SGLang #22083"):
        target.send_start({}, CTX)
    assert time.monotonic() - began < 2.5


def test_already_in_progress_is_busy(server: str) -> None:
    from profwin import EngineBusy

    _Handler.replies["/start_profile"] = (400, b"Profiling is already in progress. Call /stop_profile first.")
    with pytest.raises(EngineBusy):
        SglangServer(server, timeout=5).send_start({}, CTX)
