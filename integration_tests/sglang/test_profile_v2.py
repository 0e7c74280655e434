"""Real SGLang 0.5.23 servers started with SGLang's own ``SGLANG_PROFILE_V2=1``: never taken down.

SGLang's v2 profiler asserts ``start_step is None`` and ``profile_by_stage`` and raises on a
manual stop, each of which kills the scheduler (the field report: a stock v2 server died on
profwin's request). With profwin-sglang's server plugin the windows are exact there (the plugin
drives the v2 profiler itself) and any request the v2 profiler would die of is refused by the
plugin; without it, profwin sends nothing and says why. Each test ends with a request the server
must still answer.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from profwin import ProfileSpec, SessionError, Window
from profwin_sglang import session
from profwin_traces import summarize

from .conftest import ADMIN_KEY, Server, _serve

pytestmark = [pytest.mark.sglang, pytest.mark.slow]
TOKENS = 10


def _v2_server(model: Path, workdir: Path, *, plugin_site: Path | None, expose: bool) -> Iterator[Server]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SGLANG_PROFILE_V2", "1")
        if expose:
            env.setenv("SGLANG_EXPOSE_OWN_ENV_VARS", "1")
        yield from _serve(model, workdir, plugin_site=plugin_site, api_key=ADMIN_KEY)


@pytest.fixture(scope="module")
def v2_plugin_server(tiny_model: Path, plugin_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _v2_server(tiny_model, tmp_path_factory.mktemp("v2-plugin"), plugin_site=plugin_site, expose=False)


@pytest.fixture(scope="module")
def v2_stock_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """No plugin; started with SGLANG_EXPOSE_OWN_ENV_VARS=1 (as profwin's launch environment is),
    so it tells which profiler it runs. (0.5.12, which cannot tell: test_sglang_0_5_12.py.)"""
    yield from _v2_server(tiny_model, tmp_path_factory.mktemp("v2-stock"), plugin_site=None, expose=True)


def _kinds(path: Path) -> list[str]:
    from profwin_sglang._plugin import STEP_MARKER

    return [s.label.split()[0].removeprefix("step[") for s in summarize(path, top=0, markers=(STEP_MARKER,)).steps]


def _profile(server: Server, spec: ProfileSpec) -> tuple[Any, list[str]]:
    def run() -> tuple[Any, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with session(server.url, spec, api_key=server.api_key) as s:
                server.generate(TOKENS)
        return s, [str(w.message) for w in caught]

    return server.retry_on_kineto_crash(run)


def test_the_plugin_reports_the_v2_profiler(v2_plugin_server: Server) -> None:
    (state,) = [s["profwin_sglang"] for s in v2_plugin_server.server_info()["internal_states"]]
    assert (state["profiler"], state["token_windows"]) == ("v2", 1)


@pytest.mark.parametrize("window", ["3:8", "0:4", "6:"])
def test_step_windows_are_exact_under_v2(v2_plugin_server: Server, tmp_path: Path, window: str) -> None:
    win = Window.parse(window)
    s, caught = _profile(v2_plugin_server, ProfileSpec(window=win, output_dir=tmp_path, activities=("cpu",)))
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    end = TOKENS if win.end is None else win.end
    assert _kinds(trace.path) == ["EXTEND" if k == 0 else "DECODE" for k in range(win.start, end)]
    assert s.results[0].details["mechanism"] == "relative"
    assert not [w for w in caught if "SGLANG_PROFILE_V2" in w], caught
    assert v2_plugin_server.alive()


def test_token_window_under_v2(v2_plugin_server: Server, tmp_path: Path) -> None:
    spec = ProfileSpec(window=Window.parse("2:6 tokens"), output_dir=tmp_path, activities=("cpu",))
    s, caught = _profile(v2_plugin_server, spec)
    (trace,) = [a for a in s.artifacts if a.kind == "trace"]
    # One request: its token k comes from session step k (the prefill gives token 0).
    assert trace.steps == Window(2, 6)
    assert _kinds(trace.path) == ["DECODE"] * 4
    assert s.results[0].details["mechanism"] == "tokens"
    assert caught == []


@pytest.mark.parametrize(
    ("path", "body", "refusal"),
    [
        ("/start_profile", {"num_steps": 3, "activities": ["CPU"]}, "records only by stage"),
        ("/start_profile", {"start_step": 5, "num_steps": 3, "activities": ["CPU"]}, "takes no start_step"),
        ("/stop_profile", None, "profiler has no manual stop"),
    ],
)
def test_requests_the_v2_profiler_dies_of_are_refused(
    v2_plugin_server: Server, path: str, body: dict[str, Any] | None, refusal: str
) -> None:
    """A third party's request (not profwin's) that would kill a v2 scheduler: the plugin answers."""
    status, text = v2_plugin_server.post(path, body)
    assert status >= 400, text
    assert v2_plugin_server.alive()
    assert refusal in v2_plugin_server.log_tail(40)
    v2_plugin_server.generate(2)


def test_a_by_stage_request_still_reaches_the_v2_profiler(v2_plugin_server: Server, tmp_path: Path) -> None:
    def by_stage() -> None:
        for old in tmp_path.glob("*.trace.json.gz"):  # a first try's files, when a retry runs
            old.unlink()
        status, _ = v2_plugin_server.post(
            "/start_profile",
            {"profile_by_stage": True, "num_steps": 2, "activities": ["CPU"], "output_dir": str(tmp_path)},
        )
        assert status == 200
        v2_plugin_server.generate(6)
        names = sorted(p.name.rsplit("-", 1)[-1] for p in tmp_path.glob("*.trace.json.gz"))
        assert names == ["decode.trace.json.gz", "prefill.trace.json.gz"]
        v2_plugin_server.generate(2)

    # SGLang's own by-stage captures can die of kineto's known crash (sglang_server.KINETO_CRASHES)
    v2_plugin_server.retry_on_kineto_crash(by_stage)


def test_without_the_plugin_profwin_sends_nothing(v2_stock_server: Server, tmp_path: Path) -> None:
    logged = v2_stock_server.log.stat().st_size
    for window in ("0:4", "3:8", "2:6 tokens"):
        spec = ProfileSpec(window=Window.parse(window), output_dir=tmp_path, activities=("cpu",))
        with pytest.raises(SessionError) as info, session(v2_stock_server.url, spec, api_key=v2_stock_server.api_key):
            pytest.fail("the session must not start")
        (result,) = info.value.results
        assert result.details["skipped"] is True
        assert "runs the v2 profiler (SGLANG_PROFILE_V2=1)" in result.message, result.message
        assert "Install profwin-sglang in the server's environment" in result.message
    with open(v2_stock_server.log, "rb") as log:
        log.seek(logged)
        assert b"_profile" not in log.read()
    v2_stock_server.generate(3)
    assert v2_stock_server.alive()
