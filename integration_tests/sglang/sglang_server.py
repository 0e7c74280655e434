"""One real SGLang HTTP server on 127.0.0.1 serving the tiny model: how the sglang integration
tests (conftest.py) and benchmarks/parts/sglang_fidelity.py launch, warm, query and stop it.

Standard library only (no pytest): the benchmark imports it from the SGLang environment's python.
``stubs/torchvision.py`` is a test-harness shim on the server's PYTHONPATH (see its docstring).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

if __package__:
    from ..ports import free_port
else:  # imported by benchmarks/parts/sglang_fidelity.py, with integration_tests/ on sys.path
    from ports import free_port

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENV = Path(os.environ.get("PROFWIN_CACHE", Path.home() / ".cache" / "profwin")) / "venvs" / "sglang-0.5.23"
PYTHON = VENV / "bin/python"
OLD_VERSION = "0.5.12"  # verl 0.9.1's pin
# 0.5.12 imports the CUDA-only sgl_kernel at module level: its import-only stand-in (docstring).
OLD_STUBS = HERE / "stubs_0_5_12"
ADMIN_KEY = "profwin-test-admin-key"
# Seen once in ten runs with Python stacks on (shared/reference/engines-on-cpu.md §3): the scheduler
# dies in kineto at stop. The tests send with_stack false and retry once on exactly this crash.
# The same stop has also died of a segfault while collecting garbage inside SGLang's
# `_stop_profile` (once, under a full CI's load, with with_stack false; not again in 4 runs of the
# 32 SGLang tests alone): the second signature, both of its lines required.
KINETO_CRASHES = (
    ("Argument passed to at() was not in the map",),
    ("Fatal Python error: Segmentation fault", "in _stop_profile"),
    # SGLang's v2 profiler after a by-stage request: freeing a finished capture's torch profiler
    # (SGLang's own code path, the plugin passes the request through) segfaults in kineto at times,
    # with or without the plugin (docs/backends/sglang.md, SGLANG_PROFILE_V2).
    ("Fatal Python error: Segmentation fault", "Garbage-collecting", "Profiling starts for decode"),
    # SGLang's own by-stage capture (profile_by_stage, v1): a segfault in the first decode batch
    # right after kineto's profiler_start, in SGLang's buffer slicing for the batch (seen once, in a
    # quiet full run, test_by_stage; this session's other full runs and the last CI run passed it).
    ("Fatal Python error: Segmentation fault", "Profiling starts for DECODE", "profiler_start"),
)
STARTUP_TIMEOUT_S = 1800.0  # a loaded 2-core machine (load 8-12) starts a server in minutes, not seconds
T = TypeVar("T")


class Server:
    """One ``python -m sglang.launch_server`` process group serving the tiny model."""

    def __init__(
        self,
        model: Path,
        workdir: Path,
        *,
        plugin_site: Path | None,
        api_key: str | None = None,
        python: Path = PYTHON,
        stubs: tuple[Path, ...] = (),
        extra_args: tuple[str, ...] = (),
        grpc_port: bool = False,
    ) -> None:
        self.model = model
        self.grpc_port = grpc_port
        self.python = python
        self.stubs = stubs
        self.api_key = api_key
        self.extra_args: tuple[str, ...] = (*extra_args, *(() if api_key is None else ("--admin-api-key", api_key)))
        self.workdir = workdir
        self.plugin_site = plugin_site
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.log = workdir / "server.log"
        self.startup_s = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = free_port()
        paths = [
            HERE / "stubs",
            *self.stubs,
            *(ROOT / "packages" / p / "src" for p in ("profwin-sglang", "profwin-traces", "profwin-core")),
        ]
        if self.plugin_site is not None:
            paths.insert(1 + len(self.stubs), self.plugin_site)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths)), "HF_HUB_OFFLINE": "1"}
        env.pop("SGLANG_PLUGINS", None)
        if self.grpc_port:
            # SGLang 0.5.12 derives an (unused) gRPC port as --port + 10000 and refuses to start
            # when that passes 65535, as a free port above 55535 makes it: give it one of its own.
            # (0.5.23 reads the same variable as "serve gRPC", which refuses an admin API key.)
            env["SGLANG_GRPC_PORT"] = str(free_port())
        # --mem-fraction-static is a tolerance here, not a pool size (--max-total-tokens caps the
        # pool): SGLang refuses to start when free memory dropped by more than 1 - fraction while it
        # loaded the weights, which the other tests' engines starting beside it did at 0.05 (CI).
        # --sleep-on-idle (SGLang's own option, 0.5.12 and 0.5.23 alike): an idle scheduler polls its
        # sockets instead of spinning. Without it each idle server burns a whole core (20.2 CPU s in
        # 20 s idle, against 0.3 s with it, measured on 0.5.23), and the suite's servers that wait
        # between tests starve the other tests on a 2-core machine. It changes nothing a batch does.
        cmd = [
            str(self.python), "-m", "sglang.launch_server", "--model-path", str(self.model), "--device", "cpu",
            "--host", "127.0.0.1", "--port", str(self.port), "--disable-cuda-graph",
            "--attention-backend", "torch_native", "--mem-fraction-static", "0.5", "--max-total-tokens", "4096",
            "--skip-server-warmup", "--sleep-on-idle", *self.extra_args,
        ]  # fmt: skip
        began = time.monotonic()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        # /model_info runs no batch (unlike /health), so the scheduler's counter stays at 0.
        while time.monotonic() - began < STARTUP_TIMEOUT_S:
            if self.proc.poll() is not None:
                raise RuntimeError(f"SGLang server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/model_info", timeout=5) as reply:
                    if reply.status == 200:
                        self.startup_s = time.monotonic() - began
                        print(f"SGLang server up on {self.url} after {self.startup_s:.1f} s", file=sys.stderr)
                        return
            except OSError:
                pass
            time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"SGLang server not up after {STARTUP_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = os.getpgid(self.proc.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def restart(self) -> None:
        self.stop()
        self.start()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(line for line in text.splitlines() if "UserWarning" not in line and "warnings.warn" not in line)[
            -lines * 200 :
        ]

    def generate(self, tokens: int, prompt: str = "w5 w6 w7 w8") -> dict[str, Any]:
        """One /generate of exactly ``tokens`` new tokens: 1 prefill batch + ``tokens - 1`` decode batches."""
        body = {"text": prompt, "sampling_params": {"max_new_tokens": tokens, "temperature": 0, "ignore_eos": True}}
        request = urllib.request.Request(
            self.url + "/generate", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as reply:
            result: dict[str, Any] = json.loads(reply.read())
        assert result["meta_info"]["completion_tokens"] == tokens
        return result

    def warm(self) -> None:
        """Batches before a session, some concurrent, and a 1-token one: the scheduler's counter is
        then far past any small window (an absolute ``start_step`` of 3 or 9 would mean "now")."""
        threads = [threading.Thread(target=self.generate, args=(7 + i, f"w{i} w9")) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.generate(5)
        urllib.request.urlopen(self.url + "/health", timeout=60).read()

    def post(self, path: str, body: dict[str, Any] | None = None, *, timeout: float = 120) -> tuple[int, str]:
        """POST ``body`` as JSON to ``path`` (with the server's API key): the status and the text,
        whatever the status."""
        headers = {"Content-Type": "application/json"}
        if self.api_key is not None:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url + path, data=json.dumps(body or {}).encode(), headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return int(reply.status), reply.read().decode()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode()

    def server_info(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/server_info", timeout=30) as reply:
            info: dict[str, Any] = json.loads(reply.read())
        return info

    def forward_ct(self) -> int:
        """The scheduler's batch counter, as the profwin server plugin reports it."""
        return int(self.server_info()["internal_states"][0]["profwin_sglang"]["forward_ct"])

    def retry_on_kineto_crash(self, fn: Callable[[], T]) -> T:
        """Run ``fn``; if the scheduler died of a known kineto crash while it ran (the signature in
        what the server wrote meanwhile), restart the server and run ``fn`` once more.

        Whether the server process is still alive does not decide it: SGLang's launcher outlives a
        crashed scheduler by several seconds (crash diagnostics) before it exits, and a request in
        flight fails at once (seen in CI: the retry was skipped and every later test of the module
        met a dead port). ``restart`` stops what is left of it."""
        start = self.log.stat().st_size if self.log.exists() else 0
        try:
            return fn()
        except Exception:
            with open(self.log, "rb") as log:
                log.seek(start)
                written = log.read().decode(errors="replace")
            if not any(all(line in written for line in crash) for crash in KINETO_CRASHES):
                raise
            print("SGLang scheduler died of the known kineto crash; restarting and retrying once", file=sys.stderr)
            self.restart()
            return fn()
