"""How a session treats servers that run no profwin plugin, over real HTTP to stand-ins of stock
SGLang 0.5.23 servers (the conftest's ``stub_server``: what a stock server answers to
``/server_info`` and ``/start_profile``). The real servers are in integration_tests/sglang.

The default serves the default: a server that cannot say which profiler it runs is planned for
SGLang's default (v1), with one plain warning of what was assumed; a server known to run the v2
profiler is skipped, untouched, and the others of a fan-out still profile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, SessionError, Window
from profwin.runtime.remote import start_remote, stop_remote
from profwin_sglang import session
from profwin_sglang.targets import ServerInfo, local_profiler
from profwin_sglang.window import ASSUMED_V1


def _stock(env_vars: dict[str, str] | None = None, protocol: int | None = None) -> Any:
    """What a stock SGLang 0.5.23 server answers (``env_vars``: started with
    SGLANG_EXPOSE_OWN_ENV_VARS=1; ``protocol``: a profwin plugin entry of that protocol)."""
    state: dict[str, Any] = {}
    if env_vars is not None:
        state["env_vars"] = env_vars
    if protocol is not None:
        state["profwin_sglang"] = {"protocol": protocol, "relative_base": 1 << 40, "profiler": "v1"}

    def answer(request: Any) -> tuple[int, Any]:
        if request.path == "/server_info":
            return 200, {"version": "0.5.23", "device": "cpu", "internal_states": [state]}
        if request.path == "/start_profile":
            return 200, {"success": True, "message": "Succeeded"}
        if request.path == "/stop_profile":
            return 200, {"success": True, "message": "Succeeded"}
        return 404, {}

    return answer


def _posted(server: Any, path: str) -> list[dict[str, Any]]:
    return [r.json() for r in server.seen if r.path == path]


def _spec(tmp_path: Path, window: str = "3:8") -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), output_dir=tmp_path, activities=("cpu",))


def test_a_server_that_cannot_say_is_planned_for_the_default_profiler(stub_server: Any, tmp_path: Path) -> None:
    server = stub_server(_stock())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with session(server.url, _spec(tmp_path)) as s:
            pass
    (start,) = _posted(server, "/start_profile")
    assert "start_step" not in start  # immediate mode, trimmed afterwards: what a stock v1 server honours
    assert start["num_steps"] == 8
    (result,) = s.results
    assert result.details["profiler"] == "v1"
    assert result.details["profiler_source"] == "assumed"
    said = [str(w.message) for w in caught if ASSUMED_V1 in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert "options.sglang.profiler: v2" in said[0]


def test_a_server_that_says_v1_gets_no_word_of_an_assumption(stub_server: Any, tmp_path: Path) -> None:
    server = stub_server(_stock(env_vars={"SGLANG_PROFILE_V2": "0"}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with session(server.url, _spec(tmp_path)) as s:
            pass
    assert not any(ASSUMED_V1 in str(w.message) for w in caught)
    (result,) = s.results
    assert (result.details["profiler"], result.details["profiler_source"]) == ("v1", "env")


def test_one_v2_server_never_costs_the_others_their_windows(stub_server: Any, tmp_path: Path) -> None:
    v2 = stub_server(_stock(env_vars={"SGLANG_PROFILE_V2": "1"}))
    v1 = stub_server(_stock())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with session([v2.url, v1.url], _spec(tmp_path)):
            pass
    assert _posted(v2, "/start_profile") == []
    assert _posted(v2, "/stop_profile") == []
    assert len(_posted(v1, "/start_profile")) == 1
    assert len(_posted(v1, "/stop_profile")) == 1
    skipped = [str(w.message) for w in caught if "skipped:" in str(w.message)]
    assert len(skipped) == 1, skipped
    assert v2.url in skipped[0]
    assert "runs the v2 profiler" in skipped[0]


def test_profwin_start_and_stop_skip_the_v2_server_and_exit_0(stub_server: Any, tmp_path: Path) -> None:
    v2 = stub_server(_stock(env_vars={"SGLANG_PROFILE_V2": "true"}))
    v1 = stub_server(_stock(env_vars={}))
    spec = _spec(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = start_remote("sglang", [v2.url, v1.url], spec)
        assert [(r.ok, bool(r.details.get("skipped"))) for r in started] == [(False, True), (True, False)]
        stopped = stop_remote("sglang", [v2.url, v1.url], spec)
    assert [bool(r.details.get("skipped")) for r in stopped] == [True, False]
    assert _posted(v2, "/start_profile") == []
    assert _posted(v2, "/stop_profile") == []
    cli = subprocess.run(
        [sys.executable, "-m", "profwin", "start", "--engine", "sglang", "--url", v2.url, "--url", v1.url,
         "--window", "3:8", "--out", str(tmp_path / "cli")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert f"{v2.url}: skipped: this SGLang server runs the v2 profiler" in cli.stdout
    assert f"{v1.url}: ok" in cli.stdout


def test_only_v2_servers_is_an_error_and_nothing_is_sent(stub_server: Any, tmp_path: Path) -> None:
    v2 = stub_server(_stock(env_vars={"SGLANG_PROFILE_V2": "1"}))
    with pytest.raises(SessionError, match="runs the v2 profiler") as info, session(v2.url, _spec(tmp_path)):
        pytest.fail("nothing to profile: the session must not start")
    assert [r.details.get("skipped") for r in info.value.results] == [True]
    assert [r.path for r in v2.seen] == ["/server_info"]


def test_declared_v2_is_skipped_and_declared_v1_is_believed(stub_server: Any, tmp_path: Path) -> None:
    server = stub_server(_stock())
    declared = ProfileSpec(window=Window(3, 8), output_dir=tmp_path, options={"sglang": {"profiler": "v2"}})
    with pytest.raises(SessionError, match=r"as options\.sglang\.profiler says"), session(server.url, declared):
        pytest.fail("must not start")
    assert _posted(server, "/start_profile") == []
    believed = declared.replace(options={"sglang": {"profiler": "v1"}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with session(server.url, believed):
            pass
    assert len(_posted(server, "/start_profile")) == 1
    assert not any(ASSUMED_V1 in str(w.message) for w in caught)


def test_a_plugin_of_another_protocol_falls_back_with_a_warning(stub_server: Any, tmp_path: Path) -> None:
    server = stub_server(_stock(protocol=99))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with session(server.url, _spec(tmp_path)) as s:
            pass
    (start,) = _posted(server, "/start_profile")
    assert "start_step" not in start
    (result,) = s.results
    assert result.details["mechanism"] == "trim"
    assert (result.details["profiler"], result.details["profiler_source"]) == ("v1", "plugin")
    assert any("speaks protocol 99 and this client speaks 1" in str(w.message) for w in caught)


def test_server_info_reads_the_profiler_from_any_plugin_entry_and_the_errors() -> None:
    entry = {"protocol": 7, "profiler": "v2", "errors": ["boom", 3, "x" * 5000]}
    info = ServerInfo.parse({"internal_states": [{"profwin_sglang": entry}]})
    assert (info.plugin, info.profiler, info.profiler_source) == (False, "v2", "plugin")
    assert info.errors == ("boom", "x" * 2000)
    assert ServerInfo.parse({"internal_states": [{}, {"env_vars": {}}]}).profiler is None  # one scheduler cannot say


# A stand-in of a local SGLang launcher (a fake: it only has to look like one in /proc): a
# listener whose child is titled as SGLang titles its schedulers.
_LAUNCHER = """
import socket, subprocess, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
subprocess.Popen(["bash", "-c", "exec -a sglang::scheduler_TP0 sleep 600"])
print(s.getsockname()[1], flush=True)
time.sleep(600)
"""


@pytest.fixture
def launcher() -> Iterator[Any]:
    started = []

    def launch(env: dict[str, str]) -> str:
        base = {k: v for k, v in os.environ.items() if k != "SGLANG_PROFILE_V2"}
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER], stdout=subprocess.PIPE, text=True, env={**base, **env}, start_new_session=True
        )
        started.append(proc)
        assert proc.stdout is not None
        url = f"http://127.0.0.1:{proc.stdout.readline().strip()}"
        proc.stdout.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and local_profiler(url) is None:  # the child still exec'ing
            time.sleep(0.1)
        return url

    yield launch
    for proc in started:
        os.killpg(proc.pid, 9)
        proc.wait()


def test_a_local_server_is_told_by_its_launchers_environment(launcher: Any, stub_server: Any) -> None:
    assert local_profiler(launcher({"SGLANG_PROFILE_V2": "1"})) == "v2"
    assert local_profiler(launcher({"SGLANG_PROFILE_V2": "0"})) == "v1"
    assert local_profiler(launcher({})) == "v1"  # unset: SGLang's default
    # A listener with no SGLang scheduler under it (a proxy, a router, this test process) tells nothing.
    assert local_profiler(stub_server(_stock()).url) is None


def test_a_router_of_stock_servers_profiles_each_worker_it_can(stub_server: Any, tmp_path: Path) -> None:
    """`profwin start/stop --router` over stand-ins of a router and its stock workers: one that
    cannot say (assumed v1), one that says v1, one that runs v2 (skipped, untouched)."""
    workers = [stub_server(_stock()), stub_server(_stock(env_vars={})), stub_server(_stock(env_vars={"SGLANG_PROFILE_V2": "1"}))]
    listed = {"workers": [{"url": w.url, "worker_type": "regular", "is_healthy": True} for w in workers], "total": 3}
    router = stub_server(lambda request: (200, listed) if request.path == "/workers" else (404, {}))
    out = tmp_path / "traces"

    def cli(action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "profwin", action, "--engine", "sglang", "--router", router.url, "--window", "2:6", "--out", str(out)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    started = cli("start")
    assert started.returncode == 0, started.stdout + started.stderr
    assert [len(_posted(w, "/start_profile")) for w in workers] == [1, 1, 0]
    assert f"{workers[2].url}: skipped: this SGLang server runs the v2 profiler" in started.stdout
    assert started.stderr.count("profwin assumed this SGLang server runs SGLang's default profiler") == 1
    stopped = cli("stop")
    assert [len(_posted(w, "/stop_profile")) for w in workers] == [1, 1, 0]
    assert f"{workers[2].url}: skipped: it was left out at profwin start" in stopped.stdout
    assert stopped.returncode == 1  # the stand-ins write no trace: nothing was recorded, and it says so
    assert stopped.stderr.count("no trace was written for window 2:6") == 2, stopped.stderr
