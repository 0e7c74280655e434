"""What profwin reports is what the trace holds (issue 35, class 8): the steps of an SGLang trace
come from its own batches and the server's counters, never from the request sent, and a
capability is taken only when every scheduler reports it.

The servers here are fakes on 127.0.0.1 (the suite's ``stub_server``), declared as such: a server
that claims the profwin-sglang plugin but ignores the relative start, or whose schedulers
disagree, cannot be made from a real SGLang. Each fake keeps SGLang's wire behaviour (a
``forward_ct`` per scheduler in ``/server_info``'s ``internal_states``, ``start_step`` and
``num_steps``, the auto-stop and "Profiling is not in progress", the trace names) and writes a
Chrome trace with one ``step[DECODE bs=1]`` span per recorded batch, as SGLang's scheduler does.
The honest plugin on a real SGLang server is proven in integration_tests/sglang.
"""

from __future__ import annotations

import gzip
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin import ProfileSpec, Window, WindowWarning
from profwin.plugin.engines import TargetContext
from profwin_sglang.server_plugin import PROTOCOL, RELATIVE_BASE, STATE_KEY, TOKEN_WINDOWS
from profwin_sglang.targets import ServerInfo, SglangServer

# What the profwin-sglang server plugin reports on each scheduler (server_plugin.py), less forward_ct.
_PLUGIN = {"protocol": PROTOCOL, "relative_base": RELATIVE_BASE, "token_windows": TOKEN_WINDOWS, "profiler": "v1"}


class FakeSglang:
    """A fake SGLang 0.5.23 server with ``schedulers`` schedulers; ``plugin`` of them report the
    profwin-sglang plugin, which rewrites the relative start only if ``honest``."""

    def __init__(
        self, serve: Any, *, honest: bool, schedulers: int = 1, plugin: int = 1, batch: str = "step[DECODE bs=1]"
    ) -> None:
        self.honest = honest
        self.batch = batch  # the span each recorded batch writes
        self.schedulers = schedulers
        self.plugin = plugin
        self.forward_ct = 100  # batches since launch
        self.lock = threading.Lock()
        self.armed: dict[str, Any] | None = None  # start_step (absolute), num_steps, recorded batches
        self.server = serve(self.answer)
        self.url = self.server.url

    def answer(self, request: Any) -> tuple[int, Any]:
        with self.lock:
            if request.path == "/server_info":
                ours = {**_PLUGIN, "forward_ct": self.forward_ct}
                # Each scheduler exposes its environment (SGLANG_EXPOSE_OWN_ENV_VARS=1, profwin's launch env).
                env = {"env_vars": {"SGLANG_PROFILE_V2": "0"}}
                states = [{**env, STATE_KEY: ours} if i < self.plugin else env for i in range(self.schedulers)]
                return 200, {"version": "0.5.23", "device": "cpu", "internal_states": states}
            if request.path == "/start_profile":
                body = request.json()
                start = body.get("start_step")
                if start is not None and RELATIVE_BASE <= start < 2 * RELATIVE_BASE and self.honest:
                    start = self.forward_ct + 1 + (start - RELATIVE_BASE)
                elif not self.honest or start is None:
                    start = self.forward_ct + 1  # the lie: it starts at once
                self.armed = {**body, "start": start, "batches": 0}
                return 200, {"success": True}
            if request.path == "/stop_profile":
                if self.armed is None or self.armed["batches"] == 0:
                    return 500, {"detail": "Profiling is not in progress"}
                self._write()
                return 200, {"success": True}
        return 404, {"detail": "Not Found"}

    def run(self, batches: int) -> None:
        for _ in range(batches):
            with self.lock:
                self.forward_ct += 1
                armed = self.armed
                if armed is None or self.forward_ct < armed["start"] or armed.get("profile_prefix") == "profwin-disarmed":
                    continue
                armed["batches"] += 1
                if armed["num_steps"] is not None and armed["batches"] >= armed["num_steps"]:
                    self._write()  # SGLang's auto-stop at the window's end

    def _write(self) -> None:
        armed, self.armed = self.armed, None
        assert armed is not None
        events = [
            {"ph": "X", "cat": "user_annotation", "name": self.batch, "pid": 1, "tid": 1, "ts": k * 10.0, "dur": 9.0}
            for k in range(armed["batches"])
        ]
        name = f"{armed['profile_prefix']}-{armed['profile_id']}-TP-0.trace.json.gz"
        with gzip.open(Path(armed["output_dir"]) / name, "wt") as f:
            json.dump({"traceEvents": events}, f)


def _session(fake: FakeSglang, tmp_path: Path, window: Window, batches: int) -> profwin.RemoteSession:
    spec = ProfileSpec(window=window, output_dir=tmp_path, activities=["cpu"])
    with profwin.remote_session("sglang", fake.url, spec, timeout=10) as session:
        fake.run(batches)
    return session


def test_a_server_that_ignores_the_relative_start_is_reported_by_its_trace(tmp_path: Path, stub_server: Any) -> None:
    fake = FakeSglang(stub_server, honest=False)
    with pytest.warns(WindowWarning, match="did not apply the relative start") as said:
        session = _session(fake, tmp_path, Window(3, 8), batches=5)
    (artifact,) = session.artifacts
    assert artifact.steps == Window(0, 5)  # what the trace holds: the session's first 5 batches, not 3:8
    assert any("holds 5 batch(es), but the server ran 5 since the start: it holds steps 0:5" in str(w.message) for w in said)
    assert session.results[0].details["mode"] == "relative"


def test_more_batches_than_the_trace_leaves_its_place_unknown(tmp_path: Path, stub_server: Any) -> None:
    fake = FakeSglang(stub_server, honest=False)
    with pytest.warns(WindowWarning, match=r"cannot be steps 3:8, and where they lie in steps 0:7 is unknown"):
        session = _session(fake, tmp_path, Window(3, 8), batches=7)
    (artifact,) = session.artifacts
    assert artifact.steps is None
    assert artifact.path.exists()  # kept: it is what the server recorded


def test_an_honest_server_reports_its_window_without_a_warning(tmp_path: Path, stub_server: Any) -> None:
    import warnings

    fake = FakeSglang(stub_server, honest=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowWarning)
        session = _session(fake, tmp_path, Window(3, 8), batches=10)
    (artifact,) = session.artifacts
    assert artifact.steps == Window(3, 8)


def test_a_trace_shorter_than_the_window_says_what_it_holds(tmp_path: Path, stub_server: Any) -> None:
    fake = FakeSglang(stub_server, honest=True)
    with pytest.warns(WindowWarning, match="holds steps 3:6"):
        session = _session(fake, tmp_path, Window(3, 8), batches=6)  # stopped by profwin inside the window
    (artifact,) = session.artifacts
    assert artifact.steps == Window(3, 6)


def test_a_trace_without_batch_markers_of_a_window_that_ran_is_kept(tmp_path: Path, stub_server: Any) -> None:
    """Batches ran in the window by the server's counters, but the trace shows none: what it
    holds is unknown, and it is kept (only a window that never started leaves nothing to keep)."""
    fake = FakeSglang(stub_server, honest=True, batch="forward")
    with pytest.warns(WindowWarning, match="holds no batch, though the server ran 10 since the start"):
        session = _session(fake, tmp_path, Window(3, 8), batches=10)
    (artifact,) = session.artifacts
    assert artifact.steps is None
    assert artifact.path.exists()


@pytest.mark.parametrize(("schedulers", "plugin"), [(2, 1), (4, 3), (2, 0)])
def test_the_relative_start_needs_every_scheduler(stub_server: Any, tmp_path: Path, schedulers: int, plugin: int) -> None:
    fake = FakeSglang(stub_server, honest=True, schedulers=schedulers, plugin=plugin)
    server = SglangServer(fake.url, timeout=5)
    info = server.info(TargetContext(timeout=5))
    assert (info.plugin, info.schedulers, info.reporting) == (False, schedulers, plugin)
    plan = server.plan(ProfileSpec(window=Window(3, 8), output_dir=tmp_path), None, TargetContext(timeout=5))
    assert plan.mechanism == "trim"
    assert "start_step" not in (plan.request or {})  # never the encoding the other schedulers would read as absolute
    if plugin:
        assert f"only {plugin} of the server's {schedulers} schedulers report the profwin-sglang server plugin" in plan.notes[0]


def test_every_scheduler_with_the_plugin_is_the_capability() -> None:
    ours = {**_PLUGIN, "forward_ct": 7}
    info = ServerInfo.parse({"internal_states": [{STATE_KEY: ours}, {STATE_KEY: {**ours, "forward_ct": 9}}]})
    assert (info.plugin, info.forward_ct, info.forward_cts, info.partial_plugin) == (True, 7, (7, 9), "")
    assert (info.token_windows, info.profiler) == (True, "v1")
    assert not ServerInfo.parse({"internal_states": []}).plugin
    assert not ServerInfo.parse({"internal_states": [{STATE_KEY: ours}, "not a state"]}).plugin
