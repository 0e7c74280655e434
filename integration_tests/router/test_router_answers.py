"""``profwin.runtime.router`` against the real routers from the registry: sglang-router 0.3.2 and 0.2.2
(verl 0.9.1's CI pin) and vllm-router 0.1.17, each in its cached environment, each on 127.0.0.1.

The workers behind them here are stand-ins (a fake, declared: an HTTP server answering 200 with
a small JSON body to every path, enough for the routers' start-up and health checks); what is
tested is the routers' own answer. Real SGLang servers behind the real sglang-router are in
integration_tests/sglang/test_router.py, real vLLM servers behind the real vllm-router in
integration_tests/vllm/test_router.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import profwin

from ..conftest import built_python
from ..ports import free_port
from ..readiness import wait_ready

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.slow, pytest.mark.router]

# requirement -> how to launch it (the venv's bin/python is prepended to python commands). Each
# gets its metrics port from free_port: vllm-router's default, 29000, lies in the range free_port
# hands out, and a server another test was given there made it exit ("Address already in use").
ROUTERS = {
    "sglang-router==0.3.2": ["-m", "sglang_router.launch_router", "--prometheus-port", "{metrics}"],
    "sglang-router==0.2.2": ["-m", "sglang_router.launch_router", "--prometheus-port", "{metrics}"],
    "vllm-router==0.1.17": ["bin/vllm-router", "--prometheus-port", "{metrics}"],
}


def test_the_build_script_builds_every_router_tested() -> None:
    # scripts/build_envs.sh builds routers.txt ahead of the suite; a router missing there would
    # be built mid-suite instead, serially.
    assert sorted((HERE / "routers.txt").read_text().split()) == sorted(ROUTERS)


class StandInWorker:
    """Answers every GET and POST with 200 and a model description."""

    def __init__(self) -> None:
        body = json.dumps({"model_path": "m", "is_generation": True, "data": [{"id": "m", "object": "model"}]}).encode()

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _reply

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def workers() -> Iterator[list[StandInWorker]]:
    made = [StandInWorker(), StandInWorker()]
    yield made
    for w in made:
        w.server.shutdown()
        w.server.server_close()


@pytest.mark.parametrize("requirement", sorted(ROUTERS))
def test_the_router_lists_its_workers(requirement: str, workers: list[StandInWorker], tmp_path: Path) -> None:
    python = built_python(HERE / "build_env.sh", requirement, label=requirement)
    venv = python.parent.parent
    port = free_port()
    args = [a.format(metrics=free_port()) for a in ROUTERS[requirement]]
    cmd = [str(venv / args[0]), *args[1:]] if args[0].startswith("bin/") else [str(python), *args]
    cmd += ["--worker-urls", *(w.url for w in workers), "--host", "127.0.0.1", "--port", str(port)]
    log = tmp_path / "router.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:

        def listed() -> bool:
            with urllib.request.urlopen(url + "/workers", timeout=5) as reply:
                return len(json.loads(reply.read()).get("workers", [])) == len(workers)

        wait_ready(listed, what=f"{requirement} on {url}", proc=proc, log=log, poll_s=0.5)
        found = profwin.router(url)
        assert sorted(found) == sorted(w.url for w in workers)
        assert found.router == url
        assert [e["worker_type"] for e in found.entries] == ["regular", "regular"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
