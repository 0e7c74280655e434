"""The real sglang-router from the registry in front of two real SGLang 0.5.23 servers on 127.0.0.1.

``profwin.router(URL)`` asks the router for its workers and the session profiles each of them:
one window, one file per worker, each holding exactly the window's batches. Then ``profwin
start/stop --router`` in two processes while the router's list changes: the router is restarted
on the same port with another worker list (what an autoscaler does), so one worker left and one
joined between the start and the stop.

The router sends its health checks to ``/model_info``: SGLang's ``/health`` runs a batch, which
would be a step of the window. Requests go through the router, round-robin, one per worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin.traces import summarize

from ..conftest import built_python
from .conftest import ADMIN_KEY, ROOT, Server, _free_port, _serve

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

ROUTER = "sglang-router==0.3.2"
TOKENS = 8  # one request: 1 prefill + 7 decode batches
WINDOW = "2:6"


@pytest.fixture(scope="module")
def router_python() -> Path:
    """The cached router environment (the registry's wheel, nothing else), built on first use."""
    return built_python(ROOT / "integration_tests/router/build_env.sh", ROUTER, label=ROUTER)


class Router:
    """``python -m sglang_router.launch_router`` on 127.0.0.1 in front of ``workers``."""

    def __init__(self, python: Path, workdir: Path, port: int | None = None) -> None:
        self.python = python
        self.port = port or _free_port()
        self.log = workdir / f"router-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, workers: list[str]) -> None:
        cmd = [
            str(self.python), "-m", "sglang_router.launch_router", "--worker-urls", *workers,
            "--host", "127.0.0.1", "--port", str(self.port), "--prometheus-port", str(_free_port()),
            "--policy", "round_robin", "--health-check-endpoint", "/model_info",
        ]  # fmt: skip
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        began = time.monotonic()
        while time.monotonic() - began < 120:
            if self.proc.poll() is not None:
                raise RuntimeError(f"router exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/workers", timeout=5) as reply:
                    listed = json.loads(reply.read())["workers"]
                if sorted(w["url"] for w in listed if w["is_healthy"]) == sorted(workers):
                    print(f"router up on {self.url} after {time.monotonic() - began:.1f} s", file=sys.stderr)
                    return
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"router did not list {workers} within 120 s:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)

    def generate(self, tokens: int) -> None:
        body = {"text": "w5 w6 w7 w8", "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
        request = urllib.request.Request(self.url + "/generate", json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as reply:
            assert json.loads(reply.read())["meta_info"]["completion_tokens"] == tokens


@pytest.fixture(scope="module")
def servers(tiny_model: Path, plugin_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Server]]:
    """Two SGLang servers with profwin's server plugin (exact relative windows)."""
    first = _serve(tiny_model, tmp_path_factory.mktemp("worker-a"), plugin_site=plugin_site, api_key=ADMIN_KEY)
    second = _serve(tiny_model, tmp_path_factory.mktemp("worker-b"), plugin_site=plugin_site, api_key=ADMIN_KEY)
    try:
        yield [next(first), next(second)]
    finally:
        first.close()
        second.close()


def _kinds(path: Path) -> list[str]:
    """The batch kinds (``EXTEND``/``DECODE``) of a trace's ``step[...]`` spans, in order."""
    return [step.label.split()[0].removeprefix("step[").rstrip("]") for step in summarize(path, top=0).steps]


def _expected() -> list[str]:
    window = profwin.Window.parse(WINDOW)
    assert window.end is not None
    return ["EXTEND" if k == 0 else "DECODE" for k in range(window.start, window.end)]


def test_a_window_on_every_worker_the_router_lists(servers: list[Server], router_python: Path, tmp_path: Path) -> None:
    router = Router(router_python, tmp_path)
    router.start([s.url for s in servers])
    try:
        workers = profwin.router(router.url)
        assert sorted(workers) == sorted(s.url for s in servers)
        assert all(entry["worker_type"] == "regular" for entry in workers.entries)
        spec = profwin.ProfileSpec(window=profwin.Window.parse(WINDOW), output_dir=tmp_path / "traces", activities=("cpu",))
        with profwin.remote_session("sglang", workers, spec, api_key=ADMIN_KEY) as session:
            for _ in servers:
                router.generate(TOKENS)  # round-robin: one request per worker
    finally:
        router.stop()
    assert sorted(r.target for r in session.results) == sorted(s.url for s in servers)
    traces = [a for a in session.artifacts if a.kind == "trace"]
    assert len(traces) == len(servers), session.results
    assert len({a.path for a in traces}) == len(servers)  # a file per worker
    for artifact in traces:
        assert _kinds(artifact.path) == _expected(), artifact.path
        assert artifact.steps == profwin.Window.parse(WINDOW)


def _cli(*argv: str) -> tuple[int, list[dict[str, Any]]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("packages/profwin-core/src", "packages/profwin-sglang/src")),
    }
    done = subprocess.run(
        [sys.executable, "-m", "profwin", *argv], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    return done.returncode, json.loads(done.stdout)


def test_start_and_stop_while_workers_join_and_leave(servers: list[Server], router_python: Path, tmp_path: Path) -> None:
    a, b = servers
    router = Router(router_python, tmp_path)
    common = ["--engine", "sglang", "--router", router.url, "--window", WINDOW, "--out", str(tmp_path / "traces"), "--json"]
    common += ["--api-key", ADMIN_KEY]
    router.start([a.url])
    try:
        code, started = _cli("start", *common)
        assert code == 0, started
        assert [(r["target"], r["ok"]) for r in started] == [(a.url, True)]
        router.generate(TOKENS)  # to a, the only worker
        router.stop()
        router.start([b.url])  # a left, b joined
        code, stopped = _cli("stop", *common)
    finally:
        router.stop()
    assert code == 1, stopped  # b holds no window
    by_url = {r["target"]: r for r in stopped}
    assert by_url[a.url]["ok"]
    assert by_url[a.url]["details"]["router"] == "left"
    (trace,) = [x for x in by_url[a.url]["artifacts"] if x["kind"] == "trace"]
    assert _kinds(Path(trace["path"])) == _expected()
    assert not by_url[b.url]["ok"]
    assert by_url[b.url]["details"]["router"] == "joined"
    assert by_url[b.url]["artifacts"] == []
