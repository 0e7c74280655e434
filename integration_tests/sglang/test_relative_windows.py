"""Session-relative windows on a real SGLang 0.5.23 server that has the profwin server plugin
(and requires an admin API key for profiling): these tests are about the plugin and the key, so
the server is started with both (a stock server's windows: test_stock_server.py).

One request of N tokens runs exactly N scheduler batches: one prefill (``step[EXTEND …]``) and
N-1 decodes (``step[DECODE …]``), so a window's position shows in its trace: ``0:5`` starts with
the prefill, ``3:8`` holds decodes only. Each check counts the ``step[...]`` spans in the trace.
The tests run in file order: the first one sees the server fresh (batch counter 0).
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, TargetError, Window
from profwin.plugin.engines import TargetContext
from profwin.runtime.http import request
from profwin.runtime.remote import start_remote, stop_remote
from profwin_sglang import SessionError, SglangServer, session
from profwin_sglang.server_plugin import RELATIVE_BASE, STATE_KEY
from profwin_traces import summarize

from ..test_benchmarks import run_smoke


def step_names(path: Path) -> list[str]:
    """The ``step[...]`` span names of a trace, in time order (one per scheduler batch)."""
    return [step.label for step in summarize(path, top=0).steps]


pytestmark = [pytest.mark.sglang, pytest.mark.slow]

TOKENS = 12  # batches per request: 1 prefill + 11 decodes


def _spec(tmp_path: Path, window: str, **kwargs: object) -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), output_dir=tmp_path, activities=("cpu",), **kwargs)  # type: ignore[arg-type]


def _profile(server, spec: ProfileSpec, tokens: int = TOKENS, *, url: str | None = None):  # type: ignore[no-untyped-def]
    """One session around one request (to ``server``, reached at ``url`` when given); returns
    (session, [step names per trace], warnings)."""

    def run():  # type: ignore[no-untyped-def]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with session(url or server.url, spec, api_key=server.api_key) as s:
                server.generate(tokens)
        return s, [step_names(a.path) for a in s.artifacts if a.kind == "trace"], [str(w.message) for w in caught]

    return server.retry_on_kineto_crash(run)


def _expected(window: Window, batches: int = TOKENS) -> list[str]:
    """The step kinds a window of one request's batches must hold."""
    end = batches if window.end is None else min(window.end, batches)
    return ["EXTEND" if k == 0 else "DECODE" for k in range(window.start, end)]


def _kinds(names: list[str]) -> list[str]:
    return [name.split()[0].removeprefix("step[").rstrip("]") for name in names]


def _check_window(server, tmp_path: Path, window: str) -> None:  # type: ignore[no-untyped-def]
    before = server.forward_ct()
    s, traces, caught = _profile(server, _spec(tmp_path, window))
    win = Window.parse(window)
    assert len(traces) == 1, (s.results, caught)
    assert _kinds(traces[0]) == _expected(win), traces[0]
    assert s.artifacts[0].steps == Window(win.start, min(win.end or TOKENS, TOKENS))
    assert s.results[0].details["mode"] == "relative"
    assert server.forward_ct() == before + TOKENS  # nothing but the request ran
    assert not any("since the start" in w for w in caught), caught  # the counters agree with the trace


def test_fresh_server_window_3_8(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert plugin_server.forward_ct() == 0, "the server must be fresh for this test"
    _check_window(plugin_server, tmp_path, "3:8")


def test_fresh_server_window_0_5(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert plugin_server.forward_ct() == TOKENS  # only the previous test's request ran
    _check_window(plugin_server, tmp_path, "0:5")


def test_fresh_server_window_past_the_last_batch(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # 10:13 reaches one batch past the request's last (batch 11): the trace holds 10:12 and says so.
    s, traces, caught = _profile(plugin_server, _spec(tmp_path, "10:13"))
    assert _kinds(traces[0]) == ["DECODE", "DECODE"]
    assert s.artifacts[0].steps == Window(10, 12)
    assert any("holds steps 10:12" in w for w in caught), caught


@pytest.mark.parametrize("window", ["0:5", "3:8", "9:13"])
def test_warm_server_windows(plugin_server, tmp_path: Path, window: str) -> None:  # type: ignore[no-untyped-def]
    plugin_server.warm()
    assert plugin_server.forward_ct() > 40  # an absolute start_step of 3 or 9 would mean "now"
    if window == "9:13":  # one past the last batch again: 9, 10, 11 exist
        s, traces, _ = _profile(plugin_server, _spec(tmp_path, window))
        assert _kinds(traces[0]) == ["DECODE"] * 3
        assert s.artifacts[0].steps == Window(9, 12)
    else:
        _check_window(plugin_server, tmp_path, window)


def test_window_never_reached_is_disarmed(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s, traces, caught = _profile(plugin_server, _spec(tmp_path, "20:25"))
    assert traces == []
    assert s.artifacts == []
    assert any("never reached" in w for w in caught), caught
    # SGLang keeps an armed window across /stop_profile; profwin re-armed it out of reach, so the
    # batches that would have been steps 20-24 record nothing.
    plugin_server.generate(TOKENS)
    assert list(tmp_path.glob("*.trace.json.gz")) == []


def test_two_sessions_in_a_row(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first, t1, _ = _profile(plugin_server, _spec(tmp_path / "a", "2:4"))
    second, t2, _ = _profile(plugin_server, _spec(tmp_path / "b", "0:2"))
    assert _kinds(t1[0]) == ["DECODE", "DECODE"]
    assert _kinds(t2[0]) == ["EXTEND", "DECODE"]
    assert first.results[0].details["profile_id"] != second.results[0].details["profile_id"]


def test_async_session(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    async def run():  # type: ignore[no-untyped-def]
        async with session(plugin_server.url, _spec(tmp_path, "1:4"), api_key=plugin_server.api_key) as s:
            await asyncio.to_thread(plugin_server.generate, TOKENS)
        return s

    s = plugin_server.retry_on_kineto_crash(lambda: asyncio.run(run()))
    assert _kinds(step_names(s.artifacts[0].path)) == ["DECODE"] * 3


def test_stop_after_auto_stop(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _spec(tmp_path, "0:3")
    s = session(plugin_server.url, spec, api_key=plugin_server.api_key)
    s.start()
    plugin_server.generate(6)  # batches 3..5 run after the window: SGLang auto-stopped at batch 3
    raw = SglangServer(plugin_server.url, api_key=plugin_server.api_key)
    answer = request(plugin_server.url, "/stop_profile", api_key=plugin_server.api_key, timeout=30)
    assert answer.status == 500  # what SGLang 0.5.23 itself answers
    assert raw.send_stop(TargetContext(timeout=30)) is False  # read as "not running"
    results = s.stop()  # profwin's own stop after the auto-stop: fine, files found
    assert results[0].ok, results
    assert _kinds(step_names(s.artifacts[0].path)) == ["EXTEND", "DECODE", "DECODE"]


def test_by_stage(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _spec(tmp_path, ":3", options={"sglang": {"by_stage": True}})
    s, _traces, _ = _profile(plugin_server, spec)
    names = sorted(a.path.name for a in s.artifacts)
    assert [n.rsplit("-", 1)[1] for n in names] == ["DECODE.trace.json.gz", "EXTEND.trace.json.gz"]
    by_name = {a.path.name.rsplit("-", 1)[1]: step_names(a.path) for a in s.artifacts}
    assert _kinds(by_name["EXTEND.trace.json.gz"]) == ["EXTEND"]
    assert _kinds(by_name["DECODE.trace.json.gz"]) == ["DECODE"] * 3
    assert all(a.steps is None for a in s.artifacts)
    # The by-stage arming was cleared at the stop: a later request records nothing.
    before = set(tmp_path.iterdir())
    plugin_server.generate(4)
    assert set(tmp_path.iterdir()) == before


def test_memory_needs_cuda(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # SGLang would call torch.cuda.memory._record_memory_history on the scheduler thread, which on a
    # CPU build raises and takes the server down; profwin refuses before sending anything.
    with pytest.raises(SessionError, match="needs a CUDA server"):
        session(plugin_server.url, _spec(tmp_path, "0:2", memory=True), api_key=plugin_server.api_key).start()
    assert plugin_server.alive()
    s, traces, caught = _profile(plugin_server, _spec(tmp_path, "0:2", memory=True, on_unavailable="drop"))
    assert s.results[0].details["request"]["activities"] == ["CPU"]
    assert any("dropped memory" in w for w in caught), caught
    assert _kinds(traces[0]) == ["EXTEND", "DECODE"]


def test_backend_start_stop(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spec = _spec(tmp_path, "4:6")
    started = start_remote("sglang", [plugin_server.url], spec, api_key=plugin_server.api_key, timeout=30)
    assert started[0].ok, started
    plugin_server.generate(TOKENS)
    stopped = stop_remote(
        "sglang", [plugin_server.url], spec, api_key=plugin_server.api_key, timeout=30
    )  # new objects, as a new CLI process
    assert stopped[0].ok, stopped
    (artifact,) = stopped[0].artifacts
    assert artifact.steps == Window(4, 6)
    assert _kinds(step_names(artifact.path)) == ["DECODE", "DECODE"]


def test_fan_out_with_one_wrong_port(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once the socket closes
    sess = session([plugin_server.url, dead], _spec(tmp_path, "0:2"), api_key=plugin_server.api_key)
    with pytest.raises(SessionError) as info:
        sess.start()
    by_target = {r.target: r for r in info.value.results}
    # It started, and was rolled back (start is all or none since issue 22).
    assert not by_target[plugin_server.url].ok
    assert by_target[plugin_server.url].details["rolled_back"] is True, by_target[plugin_server.url]
    assert by_target[plugin_server.url].message.startswith("rolled back: 1 of 2 engine(s) failed to start")
    assert not by_target[dead].ok
    assert "cannot reach" in by_target[dead].message
    # The server that did start was stopped again: a new session starts cleanly.
    _s2, traces, _ = _profile(plugin_server, _spec(tmp_path / "after", "0:2"))
    assert _kinds(traces[0]) == ["EXTEND", "DECODE"]


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server on 127.0.0.1 that accepts and never answers (like a hung /start_profile)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_timeout(silent_server: str, tmp_path: Path) -> None:
    began = time.monotonic()
    with pytest.raises(SessionError, match="did not answer within 1 s") as info:
        session(silent_server, _spec(tmp_path, "0:2"), timeout=1.0).start()
    assert time.monotonic() - began < 10
    assert not info.value.results[0].ok
    with pytest.raises(TargetError, match="SGLang #22083"):
        SglangServer(silent_server, timeout=1.0).send_start({"num_steps": 1}, TargetContext(timeout=1.0))


def test_trace_is_chrome_json(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s, _, _ = _profile(plugin_server, _spec(tmp_path, "0:1"))
    (artifact,) = s.artifacts
    assert artifact.path.name.startswith(f"profwin-{s.results[0].details['profile_id']}-TP-0")
    with gzip.open(artifact.path, "rt") as f:
        assert "traceEvents" in json.load(f)


def test_admin_api_key(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SessionError, match="API key"):
        session(plugin_server.url, _spec(tmp_path, "0:2")).start()  # no key


def test_forced_trim_3_8(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # What a server without the plugin gets: record 0:8 from the next batch, cut 0:3 out after.
    s, traces, caught = _profile(plugin_server, _spec(tmp_path, "3:8", options={"sglang": {"start": "trim"}}))
    assert s.results[0].details["mode"] == "trim"
    assert any("recorded as steps 0:8" in w for w in caught), caught
    assert _kinds(traces[0]) == ["DECODE"] * 5
    assert s.artifacts[0].steps == Window(3, 8)


def test_absolute_start_step_on_a_warm_server(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The problem profwin solves: verl sends start_step=3, num_steps=5 for window 3:8. On a server
    that has run, SGLang clamps 3 to "the next batch", so the trace starts with the prefill (step 0)
    instead of the 4th batch. (An absolute start_step passes the server plugin untouched.)"""
    assert plugin_server.forward_ct() > 3
    body = {"output_dir": str(tmp_path), "start_step": 3, "num_steps": 5, "activities": ["CPU"],
            "with_stack": False, "record_shapes": False, "profile_prefix": "verl", "profile_id": "absolute"}  # fmt: skip

    def run() -> None:
        assert request(plugin_server.url, "/start_profile", body=body, api_key=plugin_server.api_key, timeout=30).ok
        plugin_server.generate(TOKENS)

    plugin_server.retry_on_kineto_crash(run)
    (trace,) = tmp_path.glob("verl-absolute-TP-0.trace.json.gz")
    assert _kinds(step_names(trace)) == ["EXTEND"] + ["DECODE"] * 4  # steps 0:5, not 3:8


# -- what profwin reports is what the trace holds (issue 35, class 8) ----------------------------
#
# A server that reports the plugin but does not apply it cannot be made from a real SGLang with the
# real plugin, so these put a tampering proxy (test harness, 127.0.0.1) in front of the real
# server: every request and answer passes through unchanged except the one change each test names
# (profwin reaches the server only through it; the test's own requests go to the server).
# The traces, the batch counters and the auto-stop are the real server's.


class Proxy:
    """A proxy on 127.0.0.1 to ``server`` (test harness) that passes ``/start_profile``'s body
    through ``start`` and ``/server_info``'s answer through ``info``, and every other byte, status
    and header SGLang sends as it is; ``seen`` lists the ``/start_profile`` bodies it forwarded."""

    def __init__(self, server, *, start=None, info=None) -> None:  # type: ignore[no-untyped-def]
        self.seen: list[dict[str, Any]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/start_profile":
                    body = json.loads(data)
                    body = start(body) if start is not None else body
                    proxy.seen.append(body)
                    data = json.dumps(body).encode()
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                forwarded = urllib.request.Request(
                    server.url + self.path, data=data if self.command == "POST" else None, headers=headers, method=self.command
                )
                try:
                    with urllib.request.urlopen(forwarded, timeout=120) as reply:
                        status, kind, payload = reply.status, reply.headers.get("Content-Type"), reply.read()
                except urllib.error.HTTPError as exc:
                    status, kind, payload = exc.code, exc.headers.get("Content-Type"), exc.read()
                if self.path == "/server_info" and info is not None and status == 200:
                    payload = json.dumps(info(json.loads(payload))).encode()
                self.send_response(status)
                if kind:
                    self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _forward

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def proxy() -> Iterator[Callable[..., Proxy]]:
    """``proxy(server, start=..., info=...)``: a started :class:`Proxy`, closed when the test ends."""
    made: list[Proxy] = []

    def make(server, **kwargs: Any) -> Proxy:  # type: ignore[no-untyped-def]
        made.append(Proxy(server, **kwargs))
        return made[-1]

    yield make
    for p in made:
        p.close()


def _ignores_the_relative_start(body: dict[str, Any]) -> dict[str, Any]:
    """The server plugin reported, but the relative start not applied: SGLang starts at the next batch."""
    start = body.get("start_step")
    if isinstance(start, int) and RELATIVE_BASE <= start < 2 * RELATIVE_BASE:
        del body["start_step"]
    return body


def _start_and_stop(proxy, server, spec: ProfileSpec, batches: int):  # type: ignore[no-untyped-def]
    """``profwin start`` and ``profwin stop`` (two sessions, the state between them) through the
    proxy around ``batches`` batches; returns (the stop's results, the warnings)."""

    def run():  # type: ignore[no-untyped-def]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            started = start_remote("sglang", [proxy.url], spec, api_key=server.api_key, timeout=30)
            assert started[0].ok, started
            server.generate(batches)
            stopped = stop_remote("sglang", [proxy.url], spec, api_key=server.api_key, timeout=30)
        return stopped, [str(w.message) for w in caught]

    return server.retry_on_kineto_crash(run)


def test_a_server_that_ignores_the_relative_start_is_reported_by_its_trace(  # type: ignore[no-untyped-def]
    plugin_server, proxy: Callable[..., Proxy], tmp_path: Path
) -> None:
    lying = proxy(plugin_server, start=_ignores_the_relative_start)
    stopped, caught = _start_and_stop(lying, plugin_server, _spec(tmp_path, "3:8"), batches=5)
    assert stopped[0].ok, stopped
    assert stopped[0].details["mode"] == "relative"
    (artifact,) = stopped[0].artifacts
    assert _kinds(step_names(artifact.path)) == ["EXTEND"] + ["DECODE"] * 4  # the session's first 5 batches
    assert artifact.steps == Window(0, 5)  # what it holds, not the 3:8 asked for
    said = "holds 5 batch(es), but the server ran 5 since the start: it holds steps 0:5, not window 3:8"
    assert any(said in w for w in caught), caught


def test_a_trace_the_counters_cannot_place_is_kept_with_unknown_steps(  # type: ignore[no-untyped-def]
    plugin_server, proxy: Callable[..., Proxy], tmp_path: Path
) -> None:
    lying = proxy(plugin_server, start=_ignores_the_relative_start)
    stopped, caught = _start_and_stop(lying, plugin_server, _spec(tmp_path, "3:8"), batches=7)
    (artifact,) = stopped[0].artifacts
    assert _kinds(step_names(artifact.path)) == ["EXTEND"] + ["DECODE"] * 4  # SGLang auto-stopped after 5
    assert artifact.steps is None  # 5 batches after 3 need 8 to have run, and 7 ran
    assert any("cannot be steps 3:8, and where they lie in steps 0:7 is unknown" in w for w in caught), caught


def _one_scheduler_without_the_plugin(info: dict[str, Any]) -> dict[str, Any]:
    """A second scheduler (a copy of the real one's entry) that does not report the plugin."""
    (state,) = info["internal_states"]
    other = {k: v for k, v in state.items() if k != STATE_KEY}
    return {**info, "internal_states": [state, other]}


def test_the_relative_start_is_sent_only_when_every_scheduler_reports_the_plugin(  # type: ignore[no-untyped-def]
    plugin_server, proxy: Callable[..., Proxy], tmp_path: Path
) -> None:
    partial = proxy(plugin_server, info=_one_scheduler_without_the_plugin)
    # Without every scheduler's plugin this server cannot say which profiler it runs (it does not
    # expose its environment): the user says it runs the classic one.
    spec = _spec(tmp_path, "3:8", options={"sglang": {"profiler": "v1"}})
    s, traces, caught = _profile(plugin_server, spec, url=partial.url)
    assert s.results[0].details["mode"] == "trim"
    (sent,) = partial.seen
    assert "start_step" not in sent  # the scheduler without the plugin would read the encoding as absolute
    assert any("only 1 of the server's 2 schedulers report the profwin-sglang server plugin" in w for w in caught), caught
    assert _kinds(traces[0]) == ["DECODE"] * 5  # recorded 0:8 from the next batch, trimmed to 3:8
    assert s.artifacts[0].steps == Window(3, 8)


def test_sglang_window_cost(plugin_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """benchmarks/sglang_window_cost.py runs (smoke size) against this live server with the plugin
    (here rather than in a file of its own, which would start a server for it alone)."""
    out = run_smoke("sglang_window_cost.py", "--url", plugin_server.url, "--api-key", plugin_server.api_key)
    assert "window 2:4 of a 8-batch request, median of 1" in out
    assert "relative" in out
    assert "token windows: a batch of 3 requests" in out
    assert "in tokens" in out
