"""Suite-wide rules and fixture.

The rule: a test may skip only because this machine lacks the hardware it needs. A skip
elsewhere is a setup bug that hides a test on a clean machine (a tool that is not there, a cache
that was warm only on a developer's machine), so it fails the run, always, locally and in CI.
Tests that need a device are marked ``cuda`` or ``npu`` and may skip where there is none.

The grouping: scripts/test.sh runs the suite in parallel workers (pytest-xdist ``-n``). The
tests of one integration folder (``integration_tests/vllm/``, ``ray/``, ...) share an engine's
servers and cached environment through session fixtures, so each folder runs whole in one worker
(in ``sglang/`` and ``verl/`` the servers are per file, so there each file is a group), and
every other test file whole in one worker (:func:`pytest_xdist_make_scheduler`:
xdist's own ``--dist loadgroup`` does not group under pytest 9); the folders that start engines
are handed out first, longest first, so the longest ones never start last.

The launch: a suite started in the background by a shell without job control (``nohup
scripts/test.sh &``, a CI step's background job) inherits SIGINT ignored, and every process it
starts would ignore it too; the tests that send a command Ctrl-C (``trim``, ``collect``) then
waited out their timeouts. The suite's processes take SIGINT back (:func:`_sigint_as_python_sets_it`).

The fixture: :func:`stub_server`, the one stdlib HTTP server the tests stand up on 127.0.0.1
when the other side of a real HTTP exchange is not a real engine (transport behaviour, the
example backend's toy engine). What an engine itself answers is tested against the real engine.
"""

from __future__ import annotations

import importlib.util
import json
import signal
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest

ROOT = Path(__file__).parent
HARDWARE_MARKERS = ("cuda", "npu")


def _sigint_as_python_sets_it() -> None:
    """SIGINT raises KeyboardInterrupt here, and the processes started from here get it as
    Python's default again: an inherited "ignored" (SigIgn bit 2, what ``nohup cmd &`` gives)
    passes through exec, and Python keeps an ignored SIGINT ignored."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_sigint_as_python_sets_it()
# The integration folders whose tests start real engines, longest unit first (pytest --durations):
# vllm/ is one unit (its servers are session fixtures), the sglang/ and verl/ files come next.
ENGINE_FOLDERS = ("vllm", "sglang", "verl", "openrlhf", "trl", "ray", "router", "traces", "npu", "memory")
# Folders whose engines are module fixtures (one server per file): each file is a group of its
# own, so their files spread over the workers instead of running end to end in one.
FILE_GROUPS = ("sglang", "verl")


def _group(nodeid: str) -> tuple[int, str]:
    """(hand-out rank, group) of a test: its integration folder, or its file."""
    path = nodeid.split("::", 1)[0]
    parts = path.split("/")
    if parts[0] == "integration_tests" and len(parts) > 2:
        rank = ENGINE_FOLDERS.index(parts[1]) if parts[1] in ENGINE_FOLDERS else len(ENGINE_FOLDERS)
        return rank, path if parts[1] in FILE_GROUPS else "/".join(parts[:2])
    return len(ENGINE_FOLDERS) + 1, path


_DOCS: list[Any] = []


def pytest_collect_file(file_path: Any, parent: pytest.Collector) -> pytest.Collector | None:
    """README.md and the pages under docs/: their fenced blocks are tests
    (``integration_tests/doc_blocks.py``, through Sybil). Imported only for those files, so a
    package's own tests run without Sybil installed."""
    path = Path(file_path)
    if path.suffix != ".md" or not (path == ROOT / "README.md" or ROOT / "docs" in path.parents):
        return None
    if not _DOCS:
        if importlib.util.find_spec("sybil") is None:
            # A package's own environment (ci.yml syncs one package and its own test group) has no
            # Sybil; pytest 8 offers the root's files to this hook whatever the paths asked for.
            # The workspace's environment (the root's test group) always has it.
            return None
        spec = importlib.util.spec_from_file_location("profwin_doc_blocks", ROOT / "integration_tests" / "doc_blocks.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _DOCS.append(module.sybil().pytest())
    collected: pytest.Collector | None = _DOCS[0](file_path, parent)
    return collected


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A stable sort: within a group the tests keep their order (module fixtures stay warm).
    items.sort(key=lambda item: _group(item.nodeid)[0])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``pytest -n N``: a group (:func:`_group`) is one unit of work, handed out in the
    collection's order (engine folders first), never split between workers."""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)[1]

    config.option.loadscopereorder = False  # keep the collection's order, not largest first
    return ByGroup(config, log)


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr: Any = report.longrepr
    return str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)


def _fail(report: pytest.TestReport | pytest.CollectReport, where: str) -> None:
    report.outcome = "failed"
    report.longrepr = (
        f"{where} skipped for a reason other than missing hardware: {_reason(report)}\n"
        f"Only tests marked {' or '.join(HARDWARE_MARKERS)} may skip (conftest.py at the repository root)."
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and not any(item.get_closest_marker(m) for m in HARDWARE_MARKERS):
        _fail(report, "test")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if report.skipped:
        _fail(report, "module")


@attrs.frozen
class StubRequest:
    """One request the stub server received."""

    method: str
    path: str
    auth: str | None
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else {}


Answer = Callable[[StubRequest], tuple[int, "bytes | Mapping[str, Any] | list[Any]"]]
"""What the server answers a request with: a status and a body (JSON for a mapping or list)."""


class StubServer:
    """A real HTTP server on 127.0.0.1 (stdlib, one thread per request) answering with ``answer``;
    ``seen`` lists every request in arrival order. A context manager: it serves while open."""

    def __init__(self, answer: Answer) -> None:
        self.seen: list[StubRequest] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                got = StubRequest(self.command, self.path, self.headers.get("Authorization"), self.rfile.read(length))
                server.seen.append(got)
                status, body = answer(got)
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (the timeout tests)

            do_GET = do_POST = _reply

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"http://{self.address}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def stub_server() -> Iterator[Callable[[Answer], StubServer]]:
    """``serve(answer)``: a started :class:`StubServer`, shut down when the test ends."""
    started: list[StubServer] = []

    def serve(answer: Answer) -> StubServer:
        started.append(StubServer(answer).__enter__())
        return started[-1]

    yield serve
    for server in started:
        server.__exit__(None, None, None)
