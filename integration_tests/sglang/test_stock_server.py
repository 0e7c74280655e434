"""A stock SGLang 0.5.23 server, started the way SGLang's own docs start one: no profwin-sglang in
its environment, no ``SGLANG_EXPOSE_OWN_ENV_VARS``, no API key, SGLang's default profiler. What
most users run, and what profwin must serve with exact windows and no option.

One request of N tokens runs exactly N scheduler batches (1 prefill + N-1 decodes), so a window's
position shows in its trace. The server is warmed first: its batch counter is then far past any
small window, where SGLang's absolute ``start_step`` would mean "now". A second stock server runs
SGLang's opt-in v2 profiler (``SGLANG_PROFILE_V2=1``, nothing exposed): profwin must leave it
alone, never take it down, and still profile the others of a fan-out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, SessionError, Window
from profwin_sglang import session
from profwin_sglang.window import ASSUMED_V1
from profwin_traces import summarize

from .conftest import ROOT, Server, _serve
from .forward import forwarded

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

TOKENS = 10
WINDOWS = ("0:4", "2:5", "3:8", "7:10", "1:2")


@pytest.fixture(scope="module")
def stock_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _serve(tiny_model, tmp_path_factory.mktemp("stock"), plugin_site=None)


@pytest.fixture(scope="module")
def stock_v2_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """SGLANG_PROFILE_V2=1 in the launcher's environment, as a user who opted in sets it; nothing
    else (the server cannot tell anyone which profiler it runs)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SGLANG_PROFILE_V2", "1")
        env.delenv("SGLANG_EXPOSE_OWN_ENV_VARS", raising=False)
        yield from _serve(tiny_model, tmp_path_factory.mktemp("stock-v2"), plugin_site=None)


def _kinds(path: Path) -> list[str]:
    return [step.label.split()[0].removeprefix("step[").rstrip("]") for step in summarize(path, top=0).steps]


def _expected(window: Window) -> list[str]:
    end = TOKENS if window.end is None else min(window.end, TOKENS)
    return ["EXTEND" if k == 0 else "DECODE" for k in range(window.start, end)]


def _spec(tmp_path: Path, window: str, **kwargs: Any) -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), output_dir=tmp_path, activities=("cpu",), **kwargs)


def _profile(server: Server, spec: ProfileSpec, url: str | None = None) -> tuple[Any, list[str]]:
    def run() -> tuple[Any, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with session(url or server.url, spec) as s:
                server.generate(TOKENS)
        return s, [str(w.message) for w in caught]

    return server.retry_on_kineto_crash(run)


@pytest.mark.parametrize("window", WINDOWS)
def test_exact_windows_on_a_warm_stock_server(stock_server: Server, tmp_path: Path, window: str) -> None:
    stock_server.warm()
    win = Window.parse(window)
    s, caught = _profile(stock_server, _spec(tmp_path, window))
    (result,) = s.results
    assert result.ok, result
    # It runs on this machine: its launcher's environment says it runs the default profiler.
    assert (result.details["profiler"], result.details["profiler_source"]) == ("v1", "process")
    assert not any(ASSUMED_V1 in w for w in caught), caught
    assert result.details["mode"] == ("immediate" if win.start == 0 else "trim")
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    assert _kinds(trace.path) == _expected(win)
    assert trace.steps == win
    print(f"stock server, window {window}: recorded {trace.steps}, kinds {_kinds(trace.path)}")


def test_a_server_profwin_cannot_see_is_assumed_to_run_the_default_and_said_once(stock_server: Server, tmp_path: Path) -> None:
    """Behind a proxy (or on another machine) nothing tells which profiler runs: profwin plans
    for SGLang's default and says so, once."""
    stock_server.warm()
    with forwarded(stock_server.port) as url:
        s, caught = _profile(stock_server, _spec(tmp_path, "2:6"), url=url)
    (result,) = s.results
    assert (result.details["profiler"], result.details["profiler_source"]) == ("v1", "assumed")
    assert sum(ASSUMED_V1 in w for w in caught) == 1, caught
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    assert _kinds(trace.path) == _expected(Window(2, 6))


def test_a_token_window_on_a_stock_server_is_its_step_window_with_a_warning(stock_server: Server, tmp_path: Path) -> None:
    stock_server.warm()
    s, caught = _profile(stock_server, _spec(tmp_path, "2:5 tokens"))
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    assert _kinds(trace.path) == _expected(Window(2, 5))
    assert any("the trace is in steps: window 2:5 tokens is recorded as steps 2:5" in w for w in caught), caught


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "profwin", *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_profwin_start_and_stop_as_the_readme_shows(stock_server: Server, tmp_path: Path) -> None:
    stock_server.warm()
    out = tmp_path / "traces"

    def run() -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
        common = ("--engine", "sglang", "--url", stock_server.url, "--window", "3:7", "--out", str(out))
        started = _cli("start", *common)
        assert started.returncode == 0, started.stderr
        stock_server.generate(TOKENS)
        return started, _cli("stop", *common)

    _, stopped = stock_server.retry_on_kineto_crash(run)
    assert stopped.returncode == 0, stopped.stderr
    assert f"{stock_server.url}: ok" in stopped.stdout
    (trace,) = out.glob("*.trace.json.gz")
    assert _kinds(trace) == _expected(Window(3, 7))


def test_an_openai_base_url_is_told_the_servers_own_and_starts_nothing(stock_server: Server, tmp_path: Path) -> None:
    """``--url http://h:30000/v1``, the URL an OpenAI client is given: SGLang has none of its own
    routes under it. The start says which URL to give, exits 1 and starts nothing: the start with
    the server's own URL then records exactly its window."""
    stock_server.warm()
    out = tmp_path / "traces"
    common = ("--engine", "sglang", "--window", "3:7", "--out", str(out))

    def run() -> subprocess.CompletedProcess[str]:
        misdirected = _cli("start", *common, "--url", stock_server.url + "/v1")
        assert misdirected.returncode == 1, misdirected.stderr
        said = f"{stock_server.url}/v1 ends in /v1, an OpenAI client's base URL: give the server's own URL, {stock_server.url}"
        assert said in misdirected.stdout, misdirected.stdout
        started = _cli("start", *common, "--url", stock_server.url)
        assert started.returncode == 0, started.stderr
        stock_server.generate(TOKENS)
        return _cli("stop", *common, "--url", stock_server.url)

    stopped = stock_server.retry_on_kineto_crash(run)
    assert stopped.returncode == 0, stopped.stderr
    (trace,) = out.glob("*.trace.json.gz")
    assert _kinds(trace) == _expected(Window(3, 7))


def test_a_stop_given_another_prefix_or_engine_leaves_the_window_for_the_right_stop(stock_server: Server, tmp_path: Path) -> None:
    """A stop with another --prefix or --engine than its start's says which and sends nothing:
    SGLang's profiler keeps its window, and the stop as started collects it exactly."""
    stock_server.warm()
    out = tmp_path / "traces"
    common = ("--url", stock_server.url, "--window", "3:7", "--out", str(out))
    left_alone = "nothing was sent to the engine, and the state is kept for that stop"

    def run() -> subprocess.CompletedProcess[str]:
        started = _cli("start", "--engine", "sglang", *common)
        assert started.returncode == 0, started.stderr
        stock_server.generate(TOKENS)
        other_prefix = _cli("stop", "--engine", "sglang", *common, "--prefix", "other")
        assert other_prefix.returncode == 1, other_prefix.stderr
        assert "profwin start ran this session with prefix 'profwin', not 'other'" in other_prefix.stdout, other_prefix.stdout
        other_engine = _cli("stop", "--engine", "vllm", *common)
        assert other_engine.returncode == 1, other_engine.stderr
        said = "profwin start ran this server's session with --engine sglang, not vllm: run profwin stop with --engine sglang"
        assert f"{said}; {left_alone}" in other_engine.stdout, other_engine.stdout
        return _cli("stop", "--engine", "sglang", *common)

    stopped = stock_server.retry_on_kineto_crash(run)
    assert stopped.returncode == 0, stopped.stderr
    (trace,) = out.glob("*.trace.json.gz")
    assert _kinds(trace) == _expected(Window(3, 7))


@pytest.mark.parametrize("window", ["0:4", "2:5"])  # recording at once, and from the session start to trim
def test_a_window_that_never_started_is_nothing_recorded(stock_server: Server, tmp_path: Path, window: str) -> None:
    """Stopped before any batch ran: nothing was recorded, exit 1, as on every engine (vLLM writes
    no trace then; SGLang writes one without a batch, which stays as it wrote it)."""
    stock_server.warm()
    common = ("--engine", "sglang", "--url", stock_server.url, "--window", window, "--out", str(tmp_path))

    def run() -> subprocess.CompletedProcess[str]:
        started = _cli("start", *common)
        assert started.returncode == 0, started.stderr
        return _cli("stop", *common)

    stopped = stock_server.retry_on_kineto_crash(run)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert f"profwin: nothing was recorded on {stock_server.url}: " in stopped.stderr
    assert "0 trace(s)" in stopped.stdout
    assert f"window {window} never started" in stopped.stdout


def test_a_second_start_into_an_open_session_is_refused_and_the_first_keeps_its_window(
    stock_server: Server, tmp_path: Path
) -> None:
    """SGLang 0.5.23 answers a second /start_profile 200 and ignores it: profwin refuses the second
    profwin start before asking (exit 2), and the first session's stop records its window exactly."""
    stock_server.warm()
    out = tmp_path / "traces"
    common = ("--engine", "sglang", "--url", stock_server.url, "--out", str(out))

    def run() -> subprocess.CompletedProcess[str]:
        started = _cli("start", *common, "--window", "3:7")
        assert started.returncode == 0, started.stderr
        again = _cli("start", *common, "--window", "0:4")
        assert again.returncode == 2, again.stdout + again.stderr
        assert "a session profwin start began is still open there" in again.stderr, again.stderr
        stock_server.generate(TOKENS)
        return _cli("stop", *common)

    stopped = stock_server.retry_on_kineto_crash(run)
    assert stopped.returncode == 0, stopped.stderr
    (trace,) = out.glob("*.trace.json.gz")
    assert _kinds(trace) == _expected(Window(3, 7))


def test_the_request_profwin_args_prints_records_on_a_stock_server(stock_server: Server, tmp_path: Path) -> None:
    """A user who sends `profwin args sglang` to a stock server by hand records the window (a
    window from 0 exactly; a later one from 0 to its end, which `profwin trim` cuts, as stderr says)."""
    stock_server.warm()
    args = _cli("args", "sglang", "--window", "2:5", "--out", str(tmp_path))
    assert args.returncode == 0, args.stderr
    body = json.loads(args.stdout)
    assert "start_step" not in body
    assert "profwin trim TRACE --window 2:5" in args.stderr
    assert '"start_step":' in args.stderr  # the plugin's exact request, with what it needs

    def post(path: str, data: dict[str, Any] | None) -> None:
        request = urllib.request.Request(
            stock_server.url + path, data=json.dumps(data or {}).encode(), headers={"Content-Type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=60).read()

    def run() -> Path:
        post("/start_profile", body)
        stock_server.generate(TOKENS)
        (trace,) = tmp_path.glob("*.trace.json.gz")
        return trace

    trace = stock_server.retry_on_kineto_crash(run)
    assert _kinds(trace) == _expected(Window(0, 5))
    cut = _cli("trim", str(trace), "--window", "2:5", "-o", str(tmp_path / "cut.json.gz"))
    assert cut.returncode == 0, cut.stderr
    assert _kinds(tmp_path / "cut.json.gz") == _expected(Window(2, 5))


def test_a_stock_v2_server_on_this_machine_is_left_alone(stock_v2_server: Server, tmp_path: Path) -> None:
    logged = stock_v2_server.log.stat().st_size
    for window in ("0:4", "3:8", "2:6 tokens"):
        with pytest.raises(SessionError) as info, session(stock_v2_server.url, _spec(tmp_path, window)):
            pytest.fail("nothing to profile: the session must not start")
        (result,) = info.value.results
        assert result.details["skipped"] is True
        assert (
            "runs the v2 profiler (SGLANG_PROFILE_V2=1), as the environment of the process serving it on this machine says"
            in result.message
        )
    with open(stock_v2_server.log, "rb") as log:
        log.seek(logged)
        assert b"_profile" not in log.read()  # nothing was sent to its profiler
    stock_v2_server.generate(3)
    assert stock_v2_server.alive()


def test_one_v2_server_never_costs_the_other_its_window(stock_server: Server, stock_v2_server: Server, tmp_path: Path) -> None:
    stock_server.warm()

    def run() -> tuple[Any, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with session([stock_v2_server.url, stock_server.url], _spec(tmp_path, "2:6")) as s:
                stock_server.generate(TOKENS)
                stock_v2_server.generate(TOKENS)
        return s, [str(w.message) for w in caught]

    s, caught = stock_server.retry_on_kineto_crash(run)
    skipped, ok = s.results
    assert skipped.details["skipped"] is True
    assert ok.ok, ok
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    assert _kinds(trace.path) == _expected(Window(2, 6))
    assert any(stock_v2_server.url in w and "skipped" in w for w in caught), caught
    assert stock_v2_server.alive()
