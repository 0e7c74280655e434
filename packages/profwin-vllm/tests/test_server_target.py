"""The vLLM server target driven by core's remote session, over real sockets on 127.0.0.1.

The HTTP server here (the suite's ``stub_server``) is a stand-in for a vLLM server, used only for what a live vLLM on this
machine cannot be made to do on demand (hang past a timeout, answer with odd bodies) and to see
the exact request bytes; vLLM's real answers (200/400/404/409, /version, --api-key) are checked
in integration_tests/vllm/test_server.py.
"""

from __future__ import annotations

import json
import socket
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import profwin
from profwin import ProfileSpec, Window, WindowWarning
from profwin.runtime.remote import start_remote, stop_remote


class Fake:
    """The suite's stub server answering each path as ``routes`` says: (status, body, delay)."""

    def __init__(self, stub_server: Any) -> None:
        self.routes: dict[str, tuple[int, bytes, float]] = {}
        self.on_request: Callable[[Any], None] = lambda request: None
        self.stub = stub_server(self._answer)
        self.url, self.seen = self.stub.url, self.stub.seen

    def _answer(self, request: Any) -> tuple[int, bytes]:
        self.on_request(request)
        status, payload, delay = self.routes.get(request.path, (404, b'{"detail":"Not Found"}', 0.0))
        time.sleep(delay)
        return status, payload


@pytest.fixture
def server(stub_server: Any) -> Fake:
    return Fake(stub_server)


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_start_reports_each_server_and_never_raises(server: Fake, tmp_path: Any) -> None:
    """Fan-out: one reachable server that takes the window, one refused; per-server results in
    order, and all or none: the server that started is stopped again, as remote_session does."""
    url, handler = server.url, server
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
    paths = [s.path for s in handler.seen]
    assert paths == ["/version", "/start_profile", "/stop_profile"]  # started, then stopped again
    posted = [s for s in handler.seen if s.path == "/start_profile"]
    assert [json.loads(s.body) for s in posted] == [ok.details["request"]]
    assert not (tmp_path / ".profwin-state").exists() or not any((tmp_path / ".profwin-state").iterdir())
    # profwin stop afterwards finds no session for either (and still stops the reachable one).
    stopped, never = stop_remote("vllm", [url, down], spec, timeout=5)
    assert not stopped.ok
    assert "no session started by profwin" in stopped.message
    assert "no session started by profwin" in never.message


def test_launch_config_versions_send_no_body_and_say_so(server: Fake, tmp_path: Any) -> None:
    url, handler = server.url, server
    handler.routes["/start_profile"] = (200, b"", 0.0)
    spec = ProfileSpec(window=Window(2, 5), output_dir=tmp_path)
    with pytest.warns(WindowWarning, match="takes the window only at launch"):
        (result,) = start_remote("vllm", [url], spec, version="0.20.0", timeout=5)
    assert result.ok
    (note,) = result.details["notes"]
    assert '--profiler-config \'{"profiler":"torch"' in note
    assert "does not report its launch config (profwin-vllm's engine plugin, GET /profwin)" in note
    assert [s.path for s in handler.seen] == ["/profwin", "/start_profile"]  # asked, then started
    assert handler.seen[1].body == b""


def _workers(*bounds: list[int] | None) -> bytes:
    reports = [{"protocol": 1, "token_windows": True, "per_session": False, "rank": r, "bounds": b} for r, b in enumerate(bounds)]
    return json.dumps({"profwin_vllm": {"protocol": 1, "workers": reports}}).encode()


@pytest.mark.parametrize(
    ("bounds", "records", "note"),
    [
        ([3, 3], "2:5", None),  # launched for this window: exact, nothing to say
        (
            [0, 0],
            "0:",
            "launched to record engine steps 0: of each session: profwin records them and trims each trace to window 2:5",
        ),
        ([2, 6], "1:7", "launched to record engine steps 1:7 of each session"),
    ],
)
def test_a_launch_config_server_that_reports_its_bounds_records_them_and_trims(
    server: Fake, tmp_path: Any, bounds: list[int], records: str, note: str | None
) -> None:
    """vLLM < 0.32 takes the window only at launch; with profwin-vllm's engine plugin the server
    says how it was launched (``GET /profwin``), so a window inside that launch window is
    recorded as launched and trimmed afterwards, with a warning."""
    server.routes["/profwin"] = (200, _workers(bounds, bounds), 0.0)
    server.routes["/start_profile"] = (200, b"", 0.0)
    spec = ProfileSpec(window=Window(2, 5), output_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (result,) = start_remote("vllm", [server.url], spec, version="0.27.0", timeout=5)
    assert result.ok, result.message
    assert result.message.startswith(f"started: vllm 0.27.0 records engine steps {records} of this session")
    said = [str(w.message) for w in caught if issubclass(w.category, WindowWarning)]
    if note is None:
        assert said == []
    else:
        (warned,) = said
        assert note in warned


def test_a_token_window_on_a_server_launched_for_other_bounds_is_its_steps_recorded_and_trimmed(
    server: Fake, tmp_path: Any
) -> None:
    """vLLM 0.27 with the engine plugin, launched for every step (``trl vllm-serve`` with vLLM's
    own ``--profiler-config``): a token window cannot reach it, so its steps are recorded as
    launched and trimmed, and the warnings say both."""
    server.routes["/profwin"] = (200, _workers([0, 0]), 0.0)
    server.routes["/start_profile"] = (200, b"", 0.0)
    spec = ProfileSpec(window=Window.parse("2:5 tokens"), output_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (result,) = start_remote("vllm", [server.url], spec, version="0.27.0", timeout=5)
    assert result.ok, result.message
    assert (result.details["window"], result.details["records"]) == ("2:5", "0:")
    said = " ".join(str(w.message) for w in caught if issubclass(w.category, WindowWarning))
    assert "the trace is in steps: window 2:5 tokens is recorded as engine steps 2:5" in said
    assert "this server was launched for engine steps 0:, not for this token window" in said
    assert "trims each trace to window 2:5" in said
    # Launched for this token window: as planned, in tokens.
    token = profwin.backend("vllm").plan(spec, version="0.27.0").details
    server.routes["/profwin"] = (200, _workers([token["delay_iterations"], token["max_iterations"]]), 0.0)
    (result,) = start_remote("vllm", [server.url], spec.replace(output_dir=tmp_path / "b"), version="0.27.0", timeout=5)
    assert (result.ok, result.details["window"]) == (True, "2:5 tokens")


@pytest.mark.parametrize(
    ("reports", "message"),
    [
        (
            _workers([4, 2], [4, 2]),
            "launched with delay_iterations=4, max_iterations=2 (engine steps 3:5 of each session), which does not hold window 2:5: relaunch it with delay_iterations=3, max_iterations=3",
        ),
        (_workers([0, 0], [3, 3]), "does not report its launch config"),  # the workers disagree: as without the plugin
        (_workers(None), "does not report its launch config"),  # an engine launched without a profiler config
    ],
)
def test_launch_bounds_that_cannot_hold_the_window_refuse_or_say_so(
    server: Fake, tmp_path: Any, reports: bytes, message: str
) -> None:
    server.routes["/profwin"] = (200, reports, 0.0)
    server.routes["/start_profile"] = (200, b"", 0.0)
    spec = ProfileSpec(window=Window(2, 5), output_dir=tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (result,) = start_remote("vllm", [server.url], spec, version="0.27.0", timeout=5)
    said = " ".join([result.message, *(str(w.message) for w in caught)])
    assert message in said, said
    assert result.ok == ("does not report" in message)


def test_409_restart_stops_and_starts_again(server: Fake, tmp_path: Any) -> None:
    """on_active="restart": a session someone else left running is stopped, then ours starts."""
    url, handler = server.url, server
    handler.routes["/version"] = (200, b'{"version":"0.32.0"}', 0.0)
    handler.routes["/start_profile"] = (409, b'{"error":{"message":"A profiling session is already active."}}', 0.0)
    spec = ProfileSpec(window=Window(0, 2), output_dir=tmp_path)
    with pytest.raises(profwin.SessionError, match="409: a profiling session is already active"):
        profwin.remote_session("vllm", url, spec, timeout=5).start()

    def busy_until_stopped(request: Any) -> None:
        """409 until a /stop_profile arrives, like a server with a session left running."""
        if request.path == "/stop_profile":
            handler.routes["/start_profile"] = (200, b"", 0.0)

    handler.on_request = busy_until_stopped
    handler.routes["/stop_profile"] = (200, b"", 0.0)
    handler.seen.clear()
    results = profwin.remote_session("vllm", url, spec, timeout=5, on_active="restart").start()
    assert [r.ok for r in results] == [True]
    assert [s.path for s in handler.seen if s.method == "POST"] == ["/start_profile", "/stop_profile", "/start_profile"]
