"""The stdlib HTTP client and the remote start/stop paths, over real sockets on 127.0.0.1.

The HTTP server here is a stand-in for a vLLM server, used only for what a live vLLM on this
machine cannot be made to do on demand (hang past a timeout, answer with odd bodies) and to see
the exact request bytes; vLLM's real answers (200/400/404/409, /version, --api-key) are checked
in integration_tests/vllm/test_server.py.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from profwin import ProfileSpec, Window
from profwin_vllm import VllmBackend
from profwin_vllm.client import normalize_url, request


class Recorder(BaseHTTPRequestHandler):
    """Answers each path as ``routes`` says and records every request."""

    routes: ClassVar[dict[str, tuple[int, bytes, float]]] = {}
    seen: ClassVar[list[dict[str, Any]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        type(self).seen.append(
            {"method": self.command, "path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        status, payload, delay = type(self).routes.get(self.path, (404, b'{"detail":"Not Found"}', 0.0))
        time.sleep(delay)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up first (the timeout test)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, type[Recorder]]]:
    handler = type("Handler", (Recorder,), {"routes": {}, "seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_normalize_url() -> None:
    assert normalize_url(" 127.0.0.1:8000/ ") == "http://127.0.0.1:8000"
    assert normalize_url("https://h/x/") == "https://h/x"


def test_bearer_token_and_json_body_are_sent(server: tuple[str, type[Recorder]]) -> None:
    url, handler = server
    handler.routes["/start_profile"] = (200, b"", 0.0)
    reply = request(url, "/start_profile", body={"delay_iterations": 3}, api_key="k3y", timeout=5)
    assert reply.ok
    (seen,) = handler.seen
    assert seen["auth"] == "Bearer k3y"
    assert json.loads(seen["body"]) == {"delay_iterations": 3}


def test_error_detail_shapes(server: tuple[str, type[Recorder]]) -> None:
    url, handler = server
    handler.routes["/a"] = (409, b'{"error":{"message":"A profiling session is already active."}}', 0.0)
    handler.routes["/b"] = (400, b'{"detail":[{"msg":"bad"}]}', 0.0)
    handler.routes["/c"] = (500, b"Internal Server Error", 0.0)
    assert request(url, "/a", timeout=5).detail == "A profiling session is already active."
    assert request(url, "/b", timeout=5).detail == '[{"msg": "bad"}]'
    c = request(url, "/c", timeout=5)
    assert (c.status, c.detail) == (500, "Internal Server Error")


def test_timeout_is_a_reply_not_an_exception(server: tuple[str, type[Recorder]]) -> None:
    url, handler = server
    handler.routes["/slow"] = (200, b"{}", 2.0)
    reply = request(url, "/slow", timeout=0.3)
    assert reply.status is None
    assert reply.error == "no answer within 0.3 s"


def test_refused_connection_is_a_reply() -> None:
    reply = request(closed_port(), "/version", method="GET", timeout=5)
    assert reply.status is None
    assert reply.error.startswith("cannot connect:")


def test_start_reports_each_server_and_never_raises(server: tuple[str, type[Recorder]], tmp_path: Any) -> None:
    """Fan-out: one reachable server that takes the window, one refused; per-server results in order."""
    url, handler = server
    handler.routes["/version"] = (200, b'{"version":"0.32.0"}', 0.0)
    handler.routes["/start_profile"] = (200, b"", 0.0)
    down = closed_port()
    spec = ProfileSpec(window=Window(20, 80), output_dir=tmp_path, prefix="fan")
    ok, failed = VllmBackend().start([url, down], spec, timeout=5)
    assert ok.ok
    assert ok.message.startswith("started: vLLM 0.32.0 records engine steps 20:80")
    assert ok.details["body"] == {"profile_prefix": "fan-0", "delay_iterations": 21, "max_iterations": 60}
    assert not failed.ok
    assert failed.target == f"http://{down}"
    assert failed.message.startswith("GET /version failed: cannot connect:")
    posted = [s for s in handler.seen if s["path"] == "/start_profile"]
    assert [json.loads(s["body"]) for s in posted] == [ok.details["body"]]


def test_launch_config_versions_send_no_body_and_say_so(server: tuple[str, type[Recorder]], tmp_path: Any) -> None:
    url, handler = server
    handler.routes["/start_profile"] = (200, b"", 0.0)
    spec = ProfileSpec(window=Window(2, 5), output_dir=tmp_path)
    (result,) = VllmBackend().start([url], spec, version="0.20.0", timeout=5)
    assert result.ok
    assert "takes the window only at launch" in result.message
    assert '--profiler-config \'{"profiler":"torch"' in result.message
    (seen,) = handler.seen
    assert seen["body"] == b""
