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
import urllib.request
from argparse import Namespace
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin_traces import count_steps, summarize

from ..conftest import built_python, dist_info_site
from ..readiness import CAP_S, RAY_PATIENCE, wait_ready
from .conftest import HERE, ROOT, Server, _serve, free_port

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
        self.port = port or free_port()
        self.log = workdir / f"router-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, workers: list[str]) -> None:
        cmd = [
            str(self.python), "-m", "sglang_router.launch_router", "--worker-urls", *workers,
            "--host", "127.0.0.1", "--port", str(self.port), "--prometheus-port", str(free_port()),
            "--policy", "round_robin", "--health-check-endpoint", "/model_info",
        ]  # fmt: skip
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def listed() -> bool:
            with urllib.request.urlopen(self.url + "/workers", timeout=5) as reply:
                found = json.loads(reply.read()).get("workers", [])
            return sorted(w["url"] for w in found if w["is_healthy"]) == sorted(workers)

        waited = wait_ready(listed, what=f"the router on {self.url} listing {workers}", proc=self.proc, log=self.log, poll_s=0.5)
        print(f"router up on {self.url} after {waited:.1f} s", file=sys.stderr)

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
def servers(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Server]]:
    """Two stock SGLang servers, as slime starts its engines: no profwin-sglang in their
    environment, no profwin variables, no API key (profwin records each window from the session
    start and trims it)."""
    first = _serve(tiny_model, tmp_path_factory.mktemp("worker-a"), plugin_site=None)
    second = _serve(tiny_model, tmp_path_factory.mktemp("worker-b"), plugin_site=None)
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
        with profwin.remote_session("sglang", workers, spec) as session:
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
        "PYTHONPATH": os.pathsep.join(
            str(ROOT / "packages" / p / "src") for p in ("profwin-core", "profwin-traces", "profwin-sglang")
        ),
    }
    done = subprocess.run(
        [sys.executable, "-m", "profwin", *argv], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    return done.returncode, json.loads(done.stdout)


def test_start_and_stop_while_workers_join_and_leave(servers: list[Server], router_python: Path, tmp_path: Path) -> None:
    a, b = servers
    router = Router(router_python, tmp_path)
    common = ["--engine", "sglang", "--router", router.url, "--window", WINDOW, "--out", str(tmp_path / "traces"), "--json"]
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
    assert by_url[a.url]["ok"], by_url[a.url]
    assert by_url[a.url]["details"]["router"] == "left"
    (trace,) = [x for x in by_url[a.url]["artifacts"] if x["kind"] == "trace"]
    assert _kinds(Path(trace["path"])) == _expected()
    assert not by_url[b.url]["ok"]
    assert by_url[b.url]["details"]["router"] == "joined"
    assert by_url[b.url]["artifacts"] == []


# -- profwin-slime: slime's rollout function over this router ------------------------------------
#
# slime is not on the registry: slime_standin/ is a stand-in with slime's module paths, signatures
# and router arguments at the commit profwin-slime names (its docstring says what it reproduces).
# The proof runs it the way slime does: its RolloutManager as a real Ray 2.60 actor loads
# profwin_slime.generate_rollout from args and calls it for rollouts 0..4 and one evaluation;
# every request goes through the real sglang-router to the two real SGLang servers above.

SLIME = HERE / "slime_standin"
ROLLOUTS = 5
CHOSEN = (1, 3)


@pytest.fixture(scope="module")
def ray_python() -> Path:
    """The cached Ray 2.60 environment (integration_tests/ray/build_env.sh)."""
    return built_python(ROOT / "integration_tests/ray/build_env.sh", label="Ray 2.60.0")


@pytest.fixture(scope="module")
def slime_router(servers: list[Server], router_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    """One router in front of both servers for the slime tests that leave its list alone."""
    router = Router(router_python, tmp_path_factory.mktemp("slime-router"))
    router.start([s.url for s in servers])
    try:
        yield router
    finally:
        router.stop()


def _slug(url: str) -> str:
    return url.removeprefix("http://").replace(":", "_")


def _profwin_config(out: Path, rollouts: object, **more: object) -> dict[str, object]:
    spec = {"window": WINDOW, "output_dir": str(out), "activities": ["cpu"]}
    return {"profwin_rollouts": rollouts, "profwin_spec": spec, **more}


def _trace_of(out: Path, kind: str, rollout_id: int, worker: str) -> list[Path]:
    return sorted(out.glob(f"profwin-{kind}{rollout_id}-{_slug(worker)}-*.trace.json.gz"))


def test_slime_profiles_the_chosen_rollouts_on_every_worker_from_a_ray_actor(
    servers: list[Server], slime_router: Router, ray_python: Path, tmp_path: Path
) -> None:
    import yaml

    out = tmp_path / "traces"
    custom = tmp_path / "profwin.yaml"  # slime's --custom-config-path: each key lands on args
    custom.write_text(yaml.safe_dump(_profwin_config(out, list(CHOSEN))))
    config = tmp_path / "driver.json"
    config.write_text(
        json.dumps(
            {
                "router": slime_router.url,
                "admin_key": None,
                "custom_config": str(custom),
                "rollouts": ROLLOUTS,
                "tokens": TOKENS,
            }
        )
    )
    site = dist_info_site(tmp_path / "site", "profwin-core", "profwin-traces", "profwin-sglang", "profwin-slime")
    paths = [
        site,
        *(ROOT / "packages" / p / "src" for p in ("profwin-core", "profwin-traces", "profwin-sglang", "profwin-slime")),
        SLIME,
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "PROFWIN_API_KEY")}
    env |= {"PYTHONPATH": os.pathsep.join(map(str, paths)), "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    env |= RAY_PATIENCE
    done = subprocess.run(
        [str(ray_python), str(HERE / "slime_ray_driver.py"), str(config)],
        env=env, capture_output=True, text=True, timeout=CAP_S, check=False,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("PROFWIN-REPORT ")]
    why = f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    assert done.returncode == 0, why
    assert lines, why
    report = json.loads(lines[0].removeprefix("PROFWIN-REPORT "))
    print(f"Ray up in {report['ray_up_s']} s, driver {report['wall_s']} s")
    assert report["generated"] == [2] * ROLLOUTS  # every rollout ran, chosen or not
    assert report["evaluated"] == 1

    expected = profwin.Window.parse(WINDOW).length
    table = []
    for rollout_id in range(ROLLOUTS):
        for worker in servers:
            files = _trace_of(out, "rollout", rollout_id, worker.url)
            steps = [count_steps(f) for f in files]
            table.append((rollout_id, worker.url, expected if rollout_id in CHOSEN else 0, steps))
            if rollout_id in CHOSEN:
                assert steps == [expected], (rollout_id, worker.url, files)
                assert _kinds(files[0]) == _expected()
            else:
                assert files == [], (rollout_id, worker.url)
    print("rollout  worker  expected  recorded\n" + "\n".join(f"{r}  {w}  {e}  {s}" for r, w, e, s in table))
    assert list(out.glob("profwin-eval*")) == []  # evaluation rollouts are not profiled unless asked
    assert sorted(p.name for p in out.glob("*.trace.json.gz")) == sorted(
        f.name for r in CHOSEN for s in servers for f in _trace_of(out, "rollout", r, s.url)
    )
    records = report["records"]
    assert [(r["rollout"], r["kind"], r["ok"], r["error"]) for r in records] == [(r, "rollout", True, "") for r in CHOSEN]
    for record in records:
        assert sorted(x["target"] for x in record["results"]) == sorted(s.url for s in servers)
        assert {x["details"]["router"] for x in record["results"]} == {"listed"}
        assert [a["steps"] for a in record["artifacts"]] == [WINDOW, WINDOW]


@pytest.fixture
def slime_here(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Namespace]]:
    """The stand-in importable in this process (with its ``slime-0.3.1.dist-info``: profwin-slime's
    version rule reads it), and ``args(router, **profwin_keys)`` as slime's ``parse_args`` leaves
    them; profwin-slime is this workspace's (installed in the dev venv)."""
    monkeypatch.syspath_prepend(str(SLIME))

    def args(router: Router, **keys: object) -> Namespace:
        return Namespace(
            sglang_router_ip="127.0.0.1", sglang_router_port=router.port, sglang_admin_api_key=None,
            rollout_batch_size=2, n_samples_per_prompt=1, rollout_max_response_len=TOKENS, rollout_temperature=1.0, **keys,
        )  # fmt: skip

    yield args
    for name in [m for m in sys.modules if m == "slime" or m.startswith("slime.") or m == "rollout_faults"]:
        del sys.modules[name]


def _none_profiling(servers: list[Server], out: Path) -> None:
    """Every server takes a new session (one already running would refuse it: EngineBusy), and
    records exactly its window."""
    with profwin.remote_session(
        "sglang",
        [s.url for s in servers],
        profwin.ProfileSpec(window=profwin.Window(0, 2), output_dir=out, activities=("cpu",)),
    ) as session:
        for server in servers:
            server.generate(3)
    assert [count_steps(a.path) for a in session.artifacts if a.kind == "trace"] == [2] * len(servers)


def test_slime_rollout_that_raises_is_stopped_collected_and_propagates(
    servers: list[Server], slime_router: Router, slime_here: Callable[..., Namespace], tmp_path: Path
) -> None:
    import profwin_slime

    out = tmp_path / "traces"
    args = slime_here(slime_router, **_profwin_config(out, "2", profwin_rollout_function="rollout_faults.raises"))
    before = profwin_slime.records()
    with pytest.raises(RuntimeError, match=r"^rollout 2: the reward model at http://rm:8000 did not answer$"):
        profwin_slime.generate_rollout(args, 2, _DataSource())
    (record,) = profwin_slime.records()[len(before) :]
    assert (record.rollout, record.ok) == (2, True)
    assert record.error == "RuntimeError: rollout 2: the reward model at http://rm:8000 did not answer"
    assert record.message.startswith("rollout 2 raised RuntimeError: rollout 2: the reward model")
    for server in servers:  # what was recorded before the failure is collected, per worker
        (trace,) = _trace_of(out, "rollout", 2, server.url)
        assert count_steps(trace) == profwin.Window.parse(WINDOW).length
    _none_profiling(servers, tmp_path / "after")


def test_slime_worker_that_leaves_the_router_mid_rollout_is_stopped_at_its_url(
    servers: list[Server], router_python: Path, slime_here: Callable[..., Namespace], tmp_path: Path
) -> None:
    import profwin_slime

    a, b = servers
    router = Router(router_python, tmp_path)
    router.start([a.url, b.url])
    try:
        out = tmp_path / "traces"
        keys = _profwin_config(out, [0], profwin_rollout_function="rollout_faults.leaves_the_router")
        args = slime_here(router, leaving_worker=b.url, **keys)
        before = profwin_slime.records()
        profwin_slime.generate_rollout(args, 0, _DataSource())
        assert [w for w in profwin.router(router.url)] == [a.url]  # b has left
    finally:
        router.stop()
    (record,) = profwin_slime.records()[len(before) :]
    by_url = {r.target: r for r in record.results}
    assert (by_url[a.url].ok, by_url[a.url].details["router"]) == (True, "listed")
    assert (by_url[b.url].ok, by_url[b.url].details["router"]) == (True, "left")
    assert by_url[b.url].message.endswith("left the router after the rollout's start; stopped at its URL")
    assert record.ok
    for server in servers:  # each recorded its own request's window; b's files collected though it left
        (trace,) = _trace_of(out, "rollout", 0, server.url)
        assert count_steps(trace) == profwin.Window.parse(WINDOW).length
        assert _kinds(trace) == _expected()
    _none_profiling(servers, tmp_path / "after")


class _DataSource:
    """slime's data source as the stand-in rollout asks it (slime_standin/slime/ray/rollout.py's)."""

    def get_samples(self, n: int) -> list[list[dict[str, object]]]:
        return [[{"prompt": f"w{i + 1} w5 w6 w7", "index": i}] for i in range(n)]

    def add_samples(self, samples: object) -> None:
        pass


def test_slime_token_window_on_stock_workers_is_the_step_window_said_once_per_worker(
    servers: list[Server], slime_router: Router, slime_here: Callable[..., Namespace], tmp_path: Path
) -> None:
    """slime's token window (``profwin_spec`` in tokens) on the router's stock workers: no server
    plugin decides tokens there, so each worker records the window's steps (from the session start,
    trimmed), and the record's notes say why, per worker. (With the plugin the window is decided in
    tokens: test_token_windows.py.)"""
    import warnings

    import profwin_slime

    out = tmp_path / "traces"
    spec = {"window": "2:6 tokens", "output_dir": str(out), "activities": ["cpu"]}
    args = slime_here(slime_router, profwin_rollouts=[0], profwin_spec=spec)
    before = profwin_slime.records()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        profwin_slime.generate_rollout(args, 0, _DataSource())
    (record,) = profwin_slime.records()[len(before) :]
    assert (record.rollout, record.kind, record.ok, record.error) == (0, "rollout", True, "")
    assert sorted(r.target for r in record.results) == sorted(s.url for s in servers)
    said = [str(w.message) for w in caught if issubclass(w.category, profwin.WindowWarning)]
    for result in record.results:
        details = result.details
        assert (details["router"], details["mechanism"], details["window"], details["records"]) == (
            "listed",
            "trim",
            "2:6",
            "0:6",
        )
        assert any(n.startswith("the trace is in steps: window 2:6 tokens is recorded as steps 2:6") for n in details["notes"])
        assert sum(result.target in w and "the trace is in steps" in w for w in said) == 1, said
    for server in servers:
        (trace,) = _trace_of(out, "rollout", 0, server.url)
        assert count_steps(trace) == profwin.Window.parse(WINDOW).length
        assert _kinds(trace) == _expected()
    _none_profiling(servers, tmp_path / "after")
