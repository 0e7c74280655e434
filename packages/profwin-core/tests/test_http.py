"""profwin.runtime.http against real sockets on 127.0.0.1: servers that answer, redirect, stall, trickle,
close mid-answer, answer garbage or a huge body. Each server runs in a thread and is shut down by
its test."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import struct
import subprocess
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin import ConfigError
from profwin.errors import ArgumentTypeError
from profwin.plugin import fan_out
from profwin.runtime.http import Reply, normalize_url, request

Handler = Callable[[socket.socket, "Server"], None]


class Server:
    """A TCP server on 127.0.0.1 whose ``handle`` writes raw bytes: what no real HTTP server sends."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.05)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopped = threading.Event()
        self.requests: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):  # the client hung up: what several tests provoke
                    self.handle(conn, self)

    def read_request(self, conn: socket.socket) -> bytes:
        """Read one request (headers and Content-Length body) and record it."""
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536) or b"\r\n\r\n"
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            (int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")), 0
        )
        while len(body) < length:
            body += conn.recv(65536)
        self.requests.append(head + b"\r\n\r\n" + body)
        return self.requests[-1]

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], Server]]:
    servers: list[Server] = []

    def start(handle: Handler) -> Server:
        servers.append(Server(handle))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def answer(status: str, body: bytes = b"", content_type: str = "application/json", extra: str = "") -> Handler:
    """A handler that reads the request and sends this answer."""

    def handle(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)
        head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
        conn.sendall(head.encode() + body)

    return handle


def trickle(prefix: bytes, server: Server, conn: socket.socket) -> None:
    """Send ``prefix``, then one byte every 0.2 s until the client hangs up or the test ends."""
    server.read_request(conn)
    conn.sendall(prefix)
    while not server.stopped.wait(0.2):
        conn.sendall(b"x")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_ok_reply_sends_the_documented_headers_and_body(serve: Callable[[Handler], Server]) -> None:
    server = serve(answer("200 OK", b'{"started": true}'))
    reply = request(server.url + "/v1/", "/start_profile", body={"window": {"start": 20}}, api_key="k-123", timeout=2)
    assert reply == Reply(
        "POST", server.url + "/v1/start_profile", 200, {"started": True}, '{"started": true}', server=server.url + "/v1"
    )
    assert reply.ok
    assert reply.describe() == f"POST {server.url}/v1/start_profile returned 200: {reply.text}"
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v1/start_profile HTTP/1.1"
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert headers["Accept"] == "application/json"
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == "Bearer k-123"
    assert headers["User-Agent"] == f"profwin/{profwin.__version__}"
    assert json.loads(body) == {"window": {"start": 20}}

    request(server.url, "/health", method="GET", timeout=2)
    get = server.requests[1].decode()
    assert get.startswith("GET /health HTTP/1.1\r\n")
    assert "Content-Type" not in get
    assert "Authorization" not in get


SLOW_SERVERS: dict[str, tuple[Handler, int | None]] = {
    "trickled headers": (lambda conn, server: trickle(b"HTTP/1.1 200 OK\r\nX-Slow: ", server, conn), None),
    "trickled body": (lambda conn, server: trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", server, conn), 200),
    "stalled": (lambda conn, server: server.stopped.wait(3) and None, None),  # never reads, never answers
}


@pytest.mark.parametrize("kind", SLOW_SERVERS)
def test_slow_servers_end_at_the_total_deadline(serve: Callable[[Handler], Server], kind: str) -> None:
    handle, status = SLOW_SERVERS[kind]
    server = serve(handle)
    began = time.monotonic()
    reply = request(server.url, "/start_profile", timeout=0.5)
    took = time.monotonic() - began
    assert reply.status == status
    assert reply.error == "did not answer within 0.5 s (no complete answer)"
    assert not reply.ok
    assert 0.5 <= took < 1.0, took  # a per-read timeout would never fire: a byte comes every 0.2 s
    said = "failed:" if status is None else "returned 200, but"
    assert reply.describe() == f"POST {server.url}/start_profile {said} did not answer within 0.5 s (no complete answer)"


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made now with the openssl command line."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


# The server sends its headers at once, then one body byte every 0.2 s: http.client hands the
# socket to the response for "Connection: close" and chunked answers, and TLS wraps it.
TRICKLED_ANSWERS = {
    "Connection: close": b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n",
    "keep-alive": b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: keep-alive\r\n\r\n",
    "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3e8\r\n",
    "HTTP/1.0": b"HTTP/1.0 200 OK\r\n\r\n",
}


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
@pytest.mark.parametrize("kind", TRICKLED_ANSWERS)
def test_the_deadline_is_total_whatever_the_server_answers(
    serve: Callable[[Handler], Server], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, tls: bool
) -> None:
    context: ssl.SSLContext | None = None
    if tls:
        cert, key = _self_signed(tmp_path)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts this certificate, as a user's CA bundle would
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)

    def handle(conn: socket.socket, server: Server) -> None:
        if context is not None:
            conn = context.wrap_socket(conn, server_side=True)
        trickle(TRICKLED_ANSWERS[kind], server, conn)

    server = serve(handle)
    url = server.url.replace("http://", "https://") if tls else server.url
    began = time.monotonic()
    reply = request(url, "/start_profile", timeout=0.5)
    took = time.monotonic() - began
    assert reply.status == 200
    assert reply.error == "did not answer within 0.5 s (no complete answer)"
    assert 0.5 <= took < 1.5, took  # unbounded before: the byte every 0.2 s kept it alive for ever


def test_a_tls_handshake_that_never_ends_is_within_the_deadline(serve: Callable[[Handler], Server]) -> None:
    def silent(conn: socket.socket, server: Server) -> None:
        while not server.stopped.wait(0.2):
            conn.sendall(b"\x16")  # a TLS record type byte, then never the rest of the record

    server = serve(silent)
    began = time.monotonic()
    reply = request(server.url.replace("http://", "https://"), "/x", timeout=0.5)
    took = time.monotonic() - began
    assert reply.status is None
    assert reply.error == "did not answer within 0.5 s (no complete answer)"
    assert 0.5 <= took < 1.5, took


@pytest.mark.parametrize("length", [f"Content-Length: {50 << 20}\r\n", ""])
def test_a_huge_or_endless_body_is_cut_at_max_body_in_bounded_memory(serve: Callable[[Handler], Server], length: str) -> None:
    def flood(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)
        conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n{length}Connection: close\r\n\r\n".encode())
        chunk = b"a" * 65536
        for _ in range(800):  # 50 MB; without a Content-Length the client cannot know it ends
            conn.sendall(chunk)

    server = serve(flood)
    tracemalloc.start()
    try:
        reply = request(server.url, "/metrics", timeout=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reply.status == 200
    assert reply.error == "answer larger than 1048576 bytes"
    assert reply.text == "a" * (1 << 20)
    assert peak < 10 << 20, peak

    small = request(server.url, "/metrics", timeout=5, max_body=10)
    assert (small.error, small.text) == ("answer larger than 10 bytes", "a" * 10)


def test_transport_failures_become_replies(serve: Callable[[Handler], Server]) -> None:
    def hang_up(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)

    def reset(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST

    def half(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)

    def half_chunked(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\nxxxx")

    def garbage(conn: socket.socket, server: Server) -> None:
        server.read_request(conn)
        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

    cases = [
        (f"http://127.0.0.1:{closed_port()}", None, "cannot reach the server: connection refused"),
        ("http://profwin-test.invalid:80", None, "cannot resolve host 'profwin-test.invalid'"),
        (serve(hang_up).url, None, "the server closed the connection without answering"),
        (serve(half).url, 200, "the server closed the connection mid-answer (90 bytes missing)"),
        (serve(half_chunked).url, 200, "the server closed the connection mid-answer"),
        (serve(garbage).url, None, "not an HTTP answer (got 'SSH-2.0-OpenSSH_9.6\\r\\n')"),
    ]
    for url, status, error in cases:
        reply = request(url, "/stop_profile", api_key="secret", timeout=1)
        assert (reply.status, reply.error[: len(error)]) == (status, error), reply
        assert not reply.ok
        assert reply.describe().startswith(f"POST {url}/stop_profile ")
        assert error in reply.describe()
        assert "secret" not in reply.describe()

    reply = request(serve(reset).url, "/stop_profile", timeout=1)
    assert reply.status is None
    # whether the RST or the FIN is seen first depends on timing; both are a hang-up
    assert reply.error in ("the server reset the connection", "the server closed the connection without answering")


def test_https_to_a_plain_http_port_is_a_clean_tls_error(serve: Callable[[Handler], Server]) -> None:
    def plain_http(conn: socket.socket, server: Server) -> None:
        conn.recv(65536)  # a TLS ClientHello: as a plain HTTP server, refuse it
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    server = serve(plain_http)
    reply = request(server.url.replace("http://", "https://"), "/start_profile", timeout=1)
    assert reply.status is None
    assert reply.error.startswith("TLS failed: "), reply.error
    assert reply.describe().startswith(f"POST https://127.0.0.1:{server.url.rsplit(':', 1)[1]}/start_profile failed: TLS failed")


def test_redirects_are_reported_not_followed_and_the_key_stays_home(serve: Callable[[Handler], Server]) -> None:
    elsewhere = serve(answer("200 OK", b"{}"))
    redirecting = serve(answer("307 Temporary Redirect", b"", extra=f"Location: {elsewhere.url}/start_profile\r\n"))
    reply = request(redirecting.url, "/start_profile", api_key="secret", timeout=1)
    assert (reply.status, reply.location, reply.error, reply.ok) == (307, f"{elsewhere.url}/start_profile", "", False)
    assert reply.describe() == (
        f"POST {redirecting.url}/start_profile redirected (307) to {elsewhere.url}/start_profile: "
        "not followed (profwin sends requests only to the URL given; pass the final URL)"
    )
    assert len(redirecting.requests) == 1
    assert elsewhere.requests == []


def test_json_rules(serve: Callable[[Handler], Server]) -> None:
    bad_json = serve(answer("200 OK", b"{'single': 'quotes'}"))
    listed = serve(answer("200 OK", b"[1, 2]"))
    text = serve(answer("200 OK", b"Start profiling.\n", "text/plain; charset=utf-8"))
    empty = serve(answer("200 OK"))
    refused = serve(answer("500 Internal Server Error", b"Internal Server Error"))  # "JSON" that is not

    reply = request(bad_json.url, "/x", timeout=1)
    assert reply.status == 200
    assert reply.error.startswith("answer is not a JSON object: Expecting property name enclosed in double quotes")
    assert (reply.data, reply.text, reply.ok) == (None, "{'single': 'quotes'}", False)

    assert request(listed.url, "/x", timeout=1).data == [1, 2]
    reply = request(listed.url, "/x", timeout=1, expect="object")
    assert (reply.status, reply.error) == (200, "answer is not a JSON object: got a JSON list '[1, 2]'")

    reply = request(text.url, "/x", timeout=1)
    assert (reply.ok, reply.data, reply.text, reply.detail) == (True, None, "Start profiling.\n", "Start profiling.")
    assert request(text.url, "/x", timeout=1, expect="object").error.startswith("answer is not a JSON object: Expecting value")
    assert request(empty.url, "/x", timeout=1).ok
    assert request(empty.url, "/x", timeout=1, expect="object").error == "answer is not a JSON object: got an empty body"

    reply = request(refused.url, "/x", timeout=1, expect="object")  # its status is the failure
    assert (reply.status, reply.error, reply.detail) == (500, "", "Internal Server Error")


def test_details_and_the_api_key_hint(serve: Callable[[Handler], Server]) -> None:
    cases = [
        ("409 Conflict", {"detail": "Profiling is already in progress"}, "Profiling is already in progress", ""),
        ("422 Unprocessable Entity", {"detail": [{"loc": ["body", "x"]}]}, '[{"loc": ["body", "x"]}]', ""),
        ("400 Bad Request", {"error": {"message": "bad window", "type": "invalid"}}, "bad window", ""),
        ("401 Unauthorized", {"error": "Unauthorized"}, "Unauthorized", "api_key=)"),
        ("403 Forbidden", {"success": False}, '{"success": false}', "api_key=)"),
    ]
    for status, body, detail, hint in cases:
        server = serve(answer(status, json.dumps(body).encode()))
        reply = request(server.url, "/start_profile", timeout=1)
        assert (reply.status, reply.detail, reply.error) == (int(status[:3]), detail, "")
        described = reply.describe()
        assert described.startswith(f"POST {server.url}/start_profile returned {status[:3]}: {detail}")
        assert described.endswith(hint)
        assert ("--api-key" in described) == bool(hint)
    assert Reply("GET", "u", 500, text="x" * 5000).detail == "x" * 2000


def test_a_refusal_under_an_openai_base_url_names_the_servers_own(serve: Callable[[Handler], Server]) -> None:
    """``http://h:8000/v1``, the URL an OpenAI client is given, is what users have at hand; under it
    every route profwin asks for is refused. The answer names the server's own URL (the URL itself
    is sent as given: a path is a proxy's prefix), and nothing else gets the hint."""
    missing = serve(answer("404 Not Found", b'{"detail": "Not Found"}'))
    guarded = serve(answer("401 Unauthorized", b'{"error": "Unauthorized"}'))
    for base, own in [(missing.url + "/v1/", missing.url), (missing.url + "/vllm/a/V1", missing.url + "/vllm/a")]:
        reply = request(base, "/start_profile", timeout=1)
        assert reply.server == own + base.rstrip("/")[len(own) :]
        assert reply.misaddressed == f"{reply.server} ends in /v1, an OpenAI client's base URL: give the server's own URL, {own}"
        assert reply.describe() == f"POST {reply.url} returned 404: Not Found ({reply.misaddressed})"
    assert missing.requests[0].startswith(b"POST /v1/start_profile HTTP/1.1")
    assert missing.requests[1].startswith(b"POST /vllm/a/V1/start_profile HTTP/1.1")
    # vLLM's API key guard covers /v1 only: its 401 there is the URL's fault, not the key's.
    reply = request(guarded.url + "/v1", "/start_profile", timeout=1)
    assert reply.describe() == f"POST {guarded.url}/v1/start_profile returned 401: Unauthorized ({reply.misaddressed})"
    assert reply.misaddressed.endswith(f"give the server's own URL, {guarded.url}")
    assert "--api-key" not in reply.describe()
    # A root, another path, a path that only ends in the letters, or an answer that is no refusal: no hint.
    ok = serve(answer("200 OK", b"{}"))
    failing = serve(answer("500 Internal Server Error", b"boom"))
    for url, path in [
        (missing.url, "/v1"),
        (missing.url + "/sglang", "/start_profile"),
        (missing.url + "/apiv1", "/start_profile"),
        (ok.url + "/v1", "/start_profile"),
        (failing.url + "/v1", "/start_profile"),
    ]:
        assert request(url, path, timeout=1).misaddressed == ""
    assert Reply("GET", "http://v1/x", 404, server="http://v1").misaddressed == ""


def test_concurrent_requests_each_get_their_own_answer(stub_server: Any) -> None:
    arrived = threading.Barrier(12, timeout=5)

    def echo(request: Any) -> tuple[int, bytes]:
        arrived.wait()  # answers only once all 12 requests are in flight at the same time
        return 200, request.body

    url = stub_server(echo).url
    targets = [url] * 12 + [f"http://127.0.0.1:{closed_port()}"]
    replies = fan_out(lambda i: request(targets[i], "/echo", body={"i": i}, timeout=10), list(range(13)))
    assert [r.data for r in replies[:12]] == [{"i": i} for i in range(12)]
    assert replies[12].error.startswith("cannot reach")  # one failure hides none of the others


def test_bad_arguments_raise_config_errors_naming_them() -> None:
    url = "http://127.0.0.1:1"
    with pytest.raises(ArgumentTypeError, match=r"^timeout: must be float \(got True\)$"):  # a bool is no number of seconds
        request(url, "/x", timeout=True)
    for timeout in (float("nan"), float("inf"), 0, -1, 1e300, 1e10, 86_400.5):
        with pytest.raises(ConfigError) as caught:
            request(url, "/x", timeout=timeout)
        assert str(caught.value) == (
            f"timeout: must be a number of seconds greater than 0 and at most 86,400 (a day) (got {timeout!r})"
        )
    with pytest.raises(ConfigError, match=r"^body\.window\.end: must be a finite number; .*\(got nan\)$"):
        request(url, "/x", body={"window": {"start": 1, "end": float("nan")}})
    with pytest.raises(ConfigError, match=r"^body\.steps\[1\]: .*\(got inf\)$"):
        request(url, "/x", body={"steps": [1, float("inf")]})
    with pytest.raises(ConfigError, match=r"^body: cannot be sent as JSON: Object of type set"):
        request(url, "/x", body={"s": {1}})
    loop: dict[str, object] = {}
    loop["self"] = loop
    with pytest.raises(ConfigError, match=r"^body: nested deeper than 100 levels"):  # a cycle is endlessly deep
        request(url, "/x", body=loop)
    with pytest.raises(ConfigError, match=r"^path: must be empty or start with '/'"):
        request(url, "start_profile")
    with pytest.raises(ConfigError) as caught:
        request(url, "/x", api_key="sec ret\n")
    assert str(caught.value).startswith("api_key: ")
    assert "sec" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"^max_body: must be a positive number of bytes \(got 0\)$"):
        request(url, "/x", max_body=0)
    with pytest.raises(ConfigError, match=r"^expect: must be 'object' or 'any' \(got 'dict'\)$"):
        request(url, "/x", expect="dict")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("  HTTPS://Example.com  ", "https://Example.com"),
        ("http://h:8000/sglang/", "http://h:8000/sglang"),
        ("http://[::1]:30000", "http://[::1]:30000"),
        ("localhost", "http://localhost"),
    ],
)
def test_normalize_url(given: str, normal: str) -> None:
    assert normalize_url(given) == normal


@pytest.mark.parametrize(
    ("given", "rule"),
    [
        ("ftp://h:21", "must start with http:// or https:// (got 'ftp://h:21')"),
        ("http://:8000", "has no host (got 'http://:8000')"),
        ("http://", "has no host"),
        ("http://h:8000/?x=1", "must not have a query or fragment"),
        ("http://h:8000#top", "must not have a query or fragment"),
        ("http://h:port", "port must be a number from 1 to 65535 (got 'port' in 'http://h:port')"),
        ("http://h:70000", "port must be a number from 1 to 65535 (got '70000'"),
        ("http://h:0", "port must be a number from 1 to 65535 (got '0'"),
        ("http://h :8000", "must be ASCII without spaces or control characters (got 'http://h :8000')"),
        ("http://h:8000/\x00", "must be ASCII without spaces or control characters"),
        ("http://hé:8000", "must be ASCII"),
        ("http://[::1:8000", "is not a valid URL: Invalid IPv6 URL"),
    ],
)
def test_normalize_url_refuses(given: str, rule: str) -> None:
    with pytest.raises(ConfigError) as caught:
        normalize_url(given)
    assert caught.value.path == "url"
    assert caught.value.reason.startswith(rule), caught.value.reason


@pytest.mark.parametrize(
    "given",
    [
        "http://admin:hunter2@h:8000",
        "user@h:8000",
        "https://admin:hun/ter2@h:8000/x",
        "127.0.0.1:9@admin:hunter2pass",  # malformed: the "host" after the @ is the password
        "http://h:1@admin:hunter2pass/x",
        "admin@hunter2pass:x@h:8000",
    ],
)
def test_normalize_url_refuses_credentials_without_showing_them(given: str) -> None:
    with pytest.raises(ConfigError) as caught:
        normalize_url(given)
    message = str(caught.value)
    assert message.startswith("url: must not contain credentials (got '")
    assert "***@h:8000" in message or "***@***" in message
    for secret in ("admin", "hunter2", "hun", "ter2", "user"):
        assert secret not in message


def test_a_server_client_holds_url_key_and_timeout_once(stub_server: Any) -> None:
    from profwin.plugin.remote import ServerClient

    server = stub_server(lambda request: (200, {"path": request.path}))
    client = ServerClient(server.address + "/", "s3cret", 5)
    assert client.url == server.url  # normalized once: scheme added, trailing slash dropped
    assert "s3cret" not in repr(client)
    reply = client.call("/version", method="GET", expect="object")
    assert reply.data == {"path": "/version"}
    assert server.seen[-1].auth == "Bearer s3cret"
    with pytest.raises(ConfigError, match="must be a number of seconds greater than 0 and at most 86,400") as info:
        ServerClient(server.url, None, 0)
    assert info.value.path == "timeout"
