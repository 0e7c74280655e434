"""The HTTP client's own wire behaviour against a local stdlib HTTP server on 127.0.0.1.

The server here only stands in for *transport* (status codes, headers, silence); what SGLang
itself answers is checked against a real SGLang server in integration_tests/sglang.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from profwin_sglang import ServerError, ServerTimeout
from profwin_sglang.http import call, normalize_url
from profwin_sglang.targets import HttpTarget, ServerInfo


class _Handler(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, str | None, bytes]]] = []
    replies: ClassVar[dict[str, tuple[int, bytes]]] = {}

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append((self.command, self.path, self.headers.get("Authorization"), body))
        if self.path == "/slow":
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


def test_normalize_url() -> None:
    assert normalize_url("127.0.0.1:30000/") == "http://127.0.0.1:30000"
    assert normalize_url(" https://h:1 ") == "https://h:1"


def test_json_body_and_bearer_key(server: str) -> None:
    reply = call(server, "/start_profile", body={"num_steps": 5}, api_key="k", timeout=5)
    assert (reply.status, reply.text) == (200, "ok")
    method, path, auth, body = _Handler.seen[-1]
    assert (method, path, auth, json.loads(body)) == ("POST", "/start_profile", "Bearer k", {"num_steps": 5})


def test_error_status(server: str) -> None:
    _Handler.replies["/start_profile"] = (401, b'{"error": "Unauthorized"}')
    with pytest.raises(ServerError, match=r"HTTP 401.*API key") as info:
        call(server, "/start_profile", body={}, timeout=5)
    assert info.value.status == 401


@pytest.mark.parametrize(
    ("body", "outcome"),
    [(b"Internal Server Error", "not-running"), (b"RuntimeError: Profiling is not in progress.", "not-running")],
)
def test_stop_not_in_progress(server: str, body: bytes, outcome: str) -> None:
    _Handler.replies["/stop_profile"] = (500, body)
    assert HttpTarget(server, timeout=5).stop() == outcome


def test_stop_other_errors_raise(server: str) -> None:
    _Handler.replies["/stop_profile"] = (500, b"CUDA error: device lost")
    with pytest.raises(ServerError, match="device lost"):
        HttpTarget(server, timeout=5).stop()


def test_info_falls_back_to_get_server_info(server: str) -> None:
    _Handler.replies["/server_info"] = (404, b"Not Found")
    _Handler.replies["/get_server_info"] = (200, json.dumps({"version": "0.5.10", "device": "cuda"}).encode())
    assert HttpTarget(server, timeout=5).info() == ServerInfo(version="0.5.10", device="cuda", plugin=False)


def test_timeout(server: str) -> None:
    began = time.monotonic()
    with pytest.raises(ServerTimeout, match=r"within 0\.5 s"):
        call(server, "/slow", timeout=0.5)
    assert time.monotonic() - began < 2.5


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServerError, match="cannot reach"):
        call(f"127.0.0.1:{port}", "/server_info", method="GET", timeout=5)
