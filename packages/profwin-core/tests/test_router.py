"""Engines behind a router: ``profwin.runtime.router`` and ``profwin start/stop --router``.

The router here is a stand-in on 127.0.0.1 (real HTTP) whose worker list the test changes
between ``profwin start`` and ``profwin stop``; its answers have the shapes the real routers gave
(sglang-router 0.2.2/0.3.2 and vllm-router 0.1.17 ``GET /workers``; ``GET /list_workers`` of
routers without ``/workers``). The real sglang-router in front of real SGLang servers is proven in
integration_tests/router/. The engines are toyserve, docs/plugins.md's example engine.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import profwin
from profwin.cli import main
from profwin.runtime.remote import state_path


class StandInRouter:
    """A router's listing endpoints only: ``/workers`` (``shape="workers"``) or, like routers older
    than ``/workers``, a 404 there and ``/list_workers`` (``shape="urls"``)."""

    def __init__(self, urls: list[str], shape: str = "workers") -> None:
        self.urls = urls
        self.shape = shape
        self.body: Any = None  # when set, answered as is (a malformed router)
        router = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, data = router.answer(self.path)
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str) -> tuple[int, Any]:
        if self.body is not None:
            return 200, self.body
        if path == "/workers" and self.shape == "workers":
            workers = [
                {"id": f"w{i}", "url": u, "model_id": "m", "worker_type": "regular", "is_healthy": True, "load": 0}
                for i, u in enumerate(self.urls)
            ]
            return 200, {"workers": workers, "total": len(workers), "stats": {"regular_count": len(workers)}}
        if path == "/list_workers" and self.shape == "urls":
            return 200, {"urls": self.urls}
        return 404, {"detail": "Not Found"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in() -> Iterator[Callable[..., StandInRouter]]:
    routers: list[StandInRouter] = []

    def make(urls: list[str], shape: str = "workers") -> StandInRouter:
        routers.append(StandInRouter(urls, shape))
        return routers[-1]

    yield make
    for r in routers:
        r.close()


@pytest.mark.parametrize("shape", ["workers", "urls"])
def test_router_lists_its_workers(stand_in: Callable[..., StandInRouter], shape: str) -> None:
    urls = ["http://127.0.0.1:1", "127.0.0.1:2/", "http://127.0.0.1:1"]
    found = profwin.router(stand_in(urls, shape).url + "/")
    assert list(found) == ["http://127.0.0.1:1", "http://127.0.0.1:2"]  # normalized, each once
    assert found.router.startswith("http://127.0.0.1:")
    assert not found.router.endswith("/")
    assert len(found.entries) == len(urls)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"workers": []}, "lists no worker"),
        ({"nodes": ["http://a:1"]}, "without a 'workers' or 'urls' list"),
        ({"workers": [{"address": "http://a:1"}]}, "workers[0] has no 'url' string"),
        ({"workers": [{"url": "ftp://a:1"}]}, "workers[0].url must start with http"),
        ({"urls": ["http://a:1", 5]}, "urls[1] has no 'url' string"),
    ],
)
def test_a_router_answer_that_is_no_worker_list(stand_in: Callable[..., StandInRouter], body: Any, says: str) -> None:
    router = stand_in([])
    router.body = body
    with pytest.raises(profwin.RouterError, match="router: .*" + says.replace("[", r"\[").replace("]", r"\]")):
        profwin.router(router.url)


def test_a_workers_answer_past_the_cap_is_refused(stand_in: Callable[..., StandInRouter]) -> None:
    """The cap on a router's answer (limits.md): 1 MiB, read no further."""
    from profwin.runtime.router import MAX_WORKERS_ANSWER_BYTES

    router = stand_in([])
    router.body = {"workers": [{"url": f"http://10.0.{i // 250}.{i % 250}:8000"} for i in range(40_000)]}
    assert len(json.dumps(router.body)) > MAX_WORKERS_ANSWER_BYTES == 1 << 20
    with pytest.raises(
        profwin.RouterError, match=r"^router: cannot list the router's workers: .*answer larger than 1048576 bytes"
    ):
        profwin.router(router.url)


def test_a_routers_openai_base_url_is_told_the_routers_own(stand_in: Callable[..., StandInRouter]) -> None:
    """``--router http://r:30000/v1`` (the URL OpenAI clients are given the router by): the error
    names the router's own URL, which lists its workers."""
    router = stand_in(["http://127.0.0.1:8001"])
    with pytest.raises(profwin.RouterError) as caught:
        profwin.router(router.url + "/v1")
    assert str(caught.value) == (
        f"router: cannot list the router's workers: GET {router.url}/v1/list_workers returned 404: Not Found "
        f"({router.url}/v1 ends in /v1, an OpenAI client's base URL: give the server's own URL, {router.url})"
    )
    assert list(profwin.router(router.url)) == ["http://127.0.0.1:8001"]


def test_an_unreachable_router_is_a_clear_error(stand_in: Callable[..., StandInRouter]) -> None:
    router = stand_in([])
    url = router.url
    router.close()
    with pytest.raises(profwin.RouterError, match=r"cannot list the router's workers: GET .*/workers failed: cannot reach"):
        profwin.router(url, timeout=5)


def test_remote_session_on_a_routers_workers(
    toy_site: Path, toy_engines: Callable[[int], list[Any]], stand_in: Callable[..., StandInRouter]
) -> None:
    engines = toy_engines(2)
    router = stand_in([e.url for e in engines])
    spec = profwin.ProfileSpec(window=profwin.Window.parse("2:5"), output_dir=engines[0].trace_dir)
    with profwin.remote_session("toy", profwin.router(router.url), spec) as session:
        for e in engines:
            e.generate(7)
    assert [r.target for r in session.results] == [e.url for e in engines]
    for result in session.results:
        (artifact,) = result.artifacts
        names = [e["name"] for e in json.loads(artifact.path.read_text())["traceEvents"]]
        assert names == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    assert len({r.artifacts[0].path for r in session.results}) == 2


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_workers_that_join_or_leave_between_start_and_stop(
    toy_site: Path,
    toy_engines: Callable[[int], list[Any]],
    stand_in: Callable[..., StandInRouter],
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b, c = toy_engines(3)
    router = stand_in([a.url, b.url])
    common = ["--engine", "toy", "--router", router.url, "--window", "1:3", "--out", str(a.trace_dir), "--json"]
    code, started = run(capsys, "start", *common)
    assert code == 0, started
    assert [(r["target"], r["ok"], r["details"]["router"]) for r in started] == [(a.url, True, "listed"), (b.url, True, "listed")]
    router.urls = [b.url, c.url]  # a leaves, c joins
    for e in (a, b, c):
        e.generate(4)
    code, stopped = run(capsys, "stop", *common)
    assert code == 1  # c holds no window
    by_url = {r["target"]: r for r in stopped}
    assert by_url[a.url]["ok"]
    assert by_url[a.url]["details"]["router"] == "left"
    assert "left the router after profwin start" in by_url[a.url]["message"]
    assert by_url[b.url]["ok"]
    assert by_url[b.url]["details"]["router"] == "listed"
    for url in (a.url, b.url):
        (artifact,) = by_url[url]["artifacts"]
        assert artifact["steps"] == "1:3"
    assert not by_url[c.url]["ok"]
    assert by_url[c.url]["details"]["router"] == "joined"
    assert c.session is None
    assert c.files == 0
    assert a.session is None
    assert b.session is None


def test_stop_with_the_router_gone_stops_what_started(
    toy_site: Path,
    toy_engines: Callable[[int], list[Any]],
    stand_in: Callable[..., StandInRouter],
    capsys: pytest.CaptureFixture[str],
) -> None:
    (a,) = toy_engines(1)
    router = stand_in([a.url], shape="urls")
    common = ["--engine", "toy", "--router", router.url, "--window", "0:2", "--out", str(a.trace_dir), "--json"]
    assert run(capsys, "start", *common)[0] == 0
    router.close()
    a.generate(3)
    code, (result,) = run(capsys, "stop", *common)
    assert code == 0
    assert result["details"]["router"] == "unknown"
    assert "the router could not be asked" in result["message"]
    assert result["artifacts"][0]["steps"] == "0:2"


# -- the router's record of profwin start: a state file like the others (issue 35, classes 6 and 8)


def _record(router_url: str, out: Path) -> Path:
    return state_path(profwin.ProfileSpec(output_dir=out), "router-toy", router_url)


def test_the_record_is_never_written_through_a_symlink(
    toy_site: Path,
    toy_engines: Callable[[int], list[Any]],
    stand_in: Callable[..., StandInRouter],
    capsys: pytest.CaptureFixture[str],
) -> None:
    (a,) = toy_engines(1)
    router = stand_in([a.url])
    victim = a.trace_dir.parent / "victim.txt"
    victim.write_text("keep me")
    record = _record(router.url, a.trace_dir)
    record.parent.mkdir(parents=True)
    record.symlink_to(victim)
    code = main(["start", "--engine", "toy", "--router", router.url, "--window", "1:3", "--out", str(a.trace_dir)])
    assert code == 2
    assert "it is a symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "keep me"
    assert (a.session, a.files) == (None, 0)  # checked before anything started


_TAMPERED = [
    "dev-zero",
    "fifo",
    "5 MB",
    "not JSON",
    "types",
    "another router",
    "not listed at the start",
    "a tag for a worker not started",
    "a newer version",
    "100k deep",
]


@pytest.mark.parametrize("tamper", _TAMPERED)
def test_a_tampered_record_is_refused_and_the_routers_workers_are_stopped(
    toy_site: Path,
    toy_engines: Callable[[int], list[Any]],
    stand_in: Callable[..., StandInRouter],
    capsys: pytest.CaptureFixture[str],
    tamper: str,
) -> None:
    a, b = toy_engines(2)
    router = stand_in([a.url, b.url])
    common = ["--engine", "toy", "--router", router.url, "--window", "1:3", "--out", str(a.trace_dir), "--json"]
    assert run(capsys, "start", *common)[0] == 0
    record = _record(router.url, a.trace_dir)
    data = json.loads(record.read_text())
    record.unlink()
    if tamper == "dev-zero":
        record.symlink_to("/dev/zero")
    elif tamper == "fifo":
        os.mkfifo(record)
    elif tamper == "5 MB":
        record.write_text(json.dumps({**data, "workers": data["workers"] + ["http://127.0.0.1:1"] * 300_000}))
    elif tamper == "not JSON":
        record.write_bytes(b"\xff\xfe not json")
    elif tamper == "100k deep":
        record.write_text("[" * 100_000 + "]" * 100_000)
    else:
        changed = {
            "types": {"started": [5]},
            "another router": {"router": "http://10.0.0.1:30000"},
            "not listed at the start": {"started": [*data["started"], "http://10.0.0.2:8000"]},
            "a tag for a worker not started": {"keyed": {"http://10.0.0.3:8000": "0" * 64}},
            "a newer version": {"format": "profwin.runtime.router-state/3"},
        }[tamper]
        record.write_text(json.dumps({**data, **changed}))
    for e in (a, b):
        e.generate(4)
    code, stopped = run(capsys, "stop", *common)
    assert code == 0, stopped
    assert [r["target"] for r in stopped] == [a.url, b.url]
    says = {
        "5 MB": "is larger than 1,048,576 bytes",
        "a newer version": "format: is profwin.runtime.router-state version 3, written by a newer profwin; this one reads versions 1 to 2",
        "100k deep": "nested deeper than 100 levels",
    }.get(tamper, "")
    for result in stopped:
        assert says in result["message"]
        assert "profwin start's record" in result["message"]
        assert "is damaged or not profwin's" in result["message"]
        assert "stopped the workers the router lists now" in result["message"]
        assert len(result["message"]) < 1000
        assert result["artifacts"][0]["steps"] == "1:3"  # each worker's own state is intact: collected
    assert (a.session, b.session) == (None, None)
    assert not os.path.lexists(record)


def test_no_file_chooses_where_the_api_key_goes(
    toy_site: Path,
    toy_engines: Callable[[int], list[Any]],
    stand_in: Callable[..., StandInRouter],
    stub_server: Callable[..., Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A record that names a host the router never listed (a tampered file) gets no bearer token,
    even with another worker's tag copied onto it: the key goes where the router lists now, and
    to a worker that left only with the tag the start wrote for that URL under this key."""
    (a,) = toy_engines(1)
    attacker = stub_server(lambda request: (200, {}))
    router = stand_in([a.url])
    common = ["--engine", "toy", "--router", router.url, "--window", "1:3", "--out", str(a.trace_dir), "--json"]
    assert run(capsys, "start", *common, "--api-key", "SECRET")[0] == 0
    record = _record(router.url, a.trace_dir)
    data = json.loads(record.read_text())
    assert set(data["keyed"]) == {a.url}
    copied = {**data["keyed"], attacker.url: data["keyed"][a.url]}
    record.write_text(json.dumps({**data, "workers": [a.url, attacker.url], "started": [a.url, attacker.url], "keyed": copied}))
    a.generate(4)
    _, stopped = run(capsys, "stop", *common, "--api-key", "SECRET")
    by_url = {r["target"]: r for r in stopped}
    assert by_url[a.url]["ok"]
    assert "the API key was not sent to it" in by_url[attacker.url]["message"]
    assert all(request.auth is None for request in attacker.seen)
    assert a.session is None


def test_state_files_of_two_urls_never_share_a_name(tmp_path: Path) -> None:
    spec = profwin.ProfileSpec(output_dir=tmp_path)
    names = ["http://h:1/a/b", "http://h:1/a_b", "http://h:1/a-b", "https://h:1/a/b"]
    for kind in ("router-sglang", "sglang"):
        assert len({state_path(spec, kind, name) for name in names}) == len(names)


# -- profwin stop --router given other arguments than profwin start (test_stop_arguments.py)


def test_a_router_given_as_a_url_is_named_and_its_record_kept(
    toy_site: Path,
    toy_engines: Callable[[int], list[Any]],
    stand_in: Callable[..., StandInRouter],
    capsys: pytest.CaptureFixture[str],
) -> None:
    (a,) = toy_engines(1)
    router = stand_in([a.url])
    common = ["--engine", "toy", "--window", "0:2", "--out", str(a.trace_dir), "--json"]
    assert run(capsys, "start", *common, "--router", router.url)[0] == 0
    a.generate(4)
    code, (result,) = run(capsys, "stop", *common, "--url", router.url)
    assert code == 1
    assert result["message"] == (
        f"{router.url} is a router that profwin start ran with --router (--engine toy): run profwin stop with --router "
        f"{router.url} --engine toy; nothing was sent to the engine, and the state is kept for that stop"
    )
    assert a.session is not None
    assert _record(router.url, a.trace_dir).exists()
    code, (result,) = run(capsys, "stop", *common, "--router", router.url)
    assert code == 0, result
    assert result["artifacts"][0]["steps"] == "0:2"
    assert result["details"]["router"] == "listed"


def test_a_router_stop_with_another_prefix_keeps_the_record(
    toy_site: Path,
    toy_engines: Callable[[int], list[Any]],
    stand_in: Callable[..., StandInRouter],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The record says which workers started: dropped, the right stop would stop the workers the
    router lists now instead, so it stays with the workers' states."""
    a, b = toy_engines(2)
    router = stand_in([a.url, b.url])
    common = ["--engine", "toy", "--router", router.url, "--window", "0:2", "--out", str(a.trace_dir), "--json"]
    assert run(capsys, "start", *common)[0] == 0
    a.generate(4)
    b.generate(4)
    router.urls = [a.url]  # b leaves the router: only the record knows it started
    code, results = run(capsys, "stop", *common, "--prefix", "other")
    assert code == 1
    assert [r["details"]["differs"] for r in results] == ["prefix", "prefix"]
    assert (a.files, b.files) == (0, 0)
    code, results = run(capsys, "stop", *common)
    assert code == 0, results
    assert [(r["target"], r["details"]["router"], r["artifacts"][0]["steps"]) for r in results] == [
        (a.url, "listed", "0:2"),
        (b.url, "left", "0:2"),
    ]
