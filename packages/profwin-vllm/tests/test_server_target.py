"""The vLLM server target driven by core's remote session, over real sockets on 127.0.0.1.

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

import profwin
from profwin import ProfileSpec, Window, WindowWarning
from profwin.remote import start_remote, stop_remote


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


def test_start_reports_each_server_and_never_raises(server: tuple[str, type[Recorder]], tmp_path: Any) -> None:
    """Fan-out: one reachable server that takes the window, one refused; per-server results in
    order, and all or none: the server that started is stopped again, as remote_session does."""
    url, handler = server
    handler.routes["/version"] = (200, b'{"version":"0.32.0"}', 0.0)
    handler.routes["/start_profile"] = (200, b"", 0.0)
    handler.routes["/stop_profile"] = (200, b"", 0.0)
    down = closed_port()
    spec = ProfileSpec(window=Window(20, 80), output_dir=tmp_path, prefix="fan")
    ok, failed = start_remote("vllm", [url, down], spec, timeout=5)
    assert not ok.ok
    assert ok.message == "rolled back: 1 of 2 engine(s) failed to start, so none profiles"
    assert ok.details["rolled_back"] is True
    assert ok.details["request"] == {"profile_prefix": "fan-0", "delay_iterations": 21, "max_iterations": 60}
    assert ok.details["version_source"] == "server"
    assert not failed.ok
    assert failed.target == f"http://{down}"
    assert failed.message.startswith("GET /version failed: cannot reach the server")
    paths = [s["path"] for s in handler.seen]
    assert paths == ["/version", "/start_profile", "/stop_profile"]  # started, then stopped again
    posted = [s for s in handler.seen if s["path"] == "/start_profile"]
    assert [json.loads(s["body"]) for s in posted] == [ok.details["request"]]
    assert not (tmp_path / ".profwin-state").exists() or not any((tmp_path / ".profwin-state").iterdir())
    # profwin stop afterwards finds no session for either (and still stops the reachable one).
    stopped, never = stop_remote("vllm", [url, down], spec, timeout=5)
    assert not stopped.ok
    assert "no session started by profwin" in stopped.message
    assert "no session started by profwin" in never.message


def test_launch_config_versions_send_no_body_and_say_so(server: tuple[str, type[Recorder]], tmp_path: Any) -> None:
    url, handler = server
    handler.routes["/start_profile"] = (200, b"", 0.0)
    spec = ProfileSpec(window=Window(2, 5), output_dir=tmp_path)
    with pytest.warns(WindowWarning, match="takes the window only at launch"):
        (result,) = start_remote("vllm", [url], spec, version="0.20.0", timeout=5)
    assert result.ok
    (note,) = result.details["notes"]
    assert '--profiler-config \'{"profiler":"torch"' in note
    (seen,) = handler.seen
    assert seen["body"] == b""


def test_409_restart_stops_and_starts_again(server: tuple[str, type[Recorder]], tmp_path: Any) -> None:
    """on_active="restart": a session someone else left running is stopped, then ours starts."""
    url, handler = server
    handler.routes["/version"] = (200, b'{"version":"0.32.0"}', 0.0)
    handler.routes["/start_profile"] = (409, b'{"error":{"message":"A profiling session is already active."}}', 0.0)
    spec = ProfileSpec(window=Window(0, 2), output_dir=tmp_path)
    with pytest.raises(profwin.SessionError, match="409: a profiling session is already active"):
        profwin.remote_session("vllm", url, spec, timeout=5).start()

    class Busy(Recorder):
        """409 until a /stop_profile arrives, like a server with a session left running."""

        def _answer(self) -> None:
            if self.path == "/stop_profile":
                type(self).routes["/start_profile"] = (200, b"", 0.0)
            super()._answer()

        do_GET = do_POST = _answer

    handler.__bases__ = (Busy,)
    handler.routes["/stop_profile"] = (200, b"", 0.0)
    handler.seen.clear()
    results = profwin.remote_session("vllm", url, spec, timeout=5, on_active="restart").start()
    assert [r.ok for r in results] == [True]
    assert [s["path"] for s in handler.seen if s["method"] == "POST"] == ["/start_profile", "/stop_profile", "/start_profile"]
