"""``profwin stop`` given other arguments than its ``profwin start``: the argument that differs is
named, and where that would cost the window (another prefix, engine or router), nothing is sent
to the engine and the state is kept, so the stop with the start's arguments still collects the
exact window. A second ``profwin start`` into a session still open is refused the same way. Against toyserve, the stand-in engine of docs/plugins.md, on 127.0.0.1; behind a
router: test_router.py; the real SGLang server: integration_tests/sglang/test_stock_server.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from profwin.cli import main
from profwin.runtime.remote import STATE_FORMAT

LEFT_ALONE = "nothing was sent to the engine, and the state is kept for that stop"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def started(capsys: pytest.CaptureFixture[str], engine: Any, *extra: str) -> tuple[list[str], Path]:
    common = ["--engine", "toy", "--url", engine.url, "--window", "0:2", "--out", str(engine.trace_dir)]
    assert run(capsys, "start", *common, *extra)[0] == 0
    (state,) = (engine.trace_dir / ".profwin-state").iterdir()
    return common, state


def stopped_as_started(capsys: pytest.CaptureFixture[str], common: list[str], *extra: str) -> None:
    code, (result,) = run(capsys, "stop", *common, *extra)
    assert code == 0, result
    assert result["artifacts"][0]["steps"] == "0:2"


@pytest.mark.parametrize(("at_start", "at_stop"), [([], ["--prefix", "other"]), (["--prefix", "mine"], [])])
def test_another_prefix_is_named_and_the_session_left_for_the_right_stop(
    toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str], at_start: list[str], at_stop: list[str]
) -> None:
    common, state = started(capsys, engine, *at_start)
    engine.generate(4)
    code, (result,) = run(capsys, "stop", *common, *at_stop)
    assert code == 1
    was, given = ("profwin", "other") if at_stop else ("mine", "profwin")
    assert result["message"] == (
        f"profwin start ran this session with prefix {was!r}, not {given!r} ({state}): run profwin stop with --prefix {was}; "
        + LEFT_ALONE
    )
    assert result["details"] == {"differs": "prefix"}
    assert state.exists()
    assert engine.session is not None  # its profiler still runs: nothing was sent
    assert engine.files == 0
    stopped_as_started(capsys, common, *at_start)


def test_another_engine_is_named_and_the_session_left_for_the_right_stop(
    toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The toy backend is the only one here: its state, renamed as another engine's (``other``),
    is what ``profwin start --engine other`` leaves for this URL."""
    common, state = started(capsys, engine)
    engine.generate(4)
    as_other = state.with_name("other" + state.name.removeprefix("toy"))
    state.rename(as_other)
    code, (result,) = run(capsys, "stop", *common)
    assert code == 1
    assert result["message"] == (
        f"profwin start ran this server's session with --engine other, not toy: run profwin stop with --engine other; {LEFT_ALONE}"
    )
    assert result["details"] == {"differs": "engine"}
    assert as_other.exists()
    assert engine.session is not None
    as_other.rename(state)
    stopped_as_started(capsys, common)


def test_a_url_spelled_otherwise_names_the_urls_started(toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    common, _ = started(capsys, engine)
    other = engine.url.replace("127.0.0.1", "localhost")
    code, (result,) = run(capsys, "stop", *[other if arg == engine.url else arg for arg in common])
    assert code == 1
    assert result["message"].startswith(
        f"no session started by profwin for this URL in {engine.trace_dir}, which holds profwin start's state for "
        f"'{engine.url}' (another spelling of this server's URL? give profwin stop the --url profwin start had)"
    ), result["message"]


def test_a_state_of_version_2_has_no_prefix_and_is_read(toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    common, state = started(capsys, engine)
    data = json.loads(state.read_text())
    assert (data.pop("format"), data.pop("prefix")) == (STATE_FORMAT.tag, "profwin")
    state.write_text(json.dumps({"format": "profwin.state/2", **data}))
    engine.generate(4)
    stopped_as_started(capsys, common)


def test_a_prefix_profwin_never_writes_is_damage(toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str]) -> None:
    common, state = started(capsys, engine)
    state.write_text(json.dumps({**json.loads(state.read_text()), "prefix": "../" * 100}))
    code, (result,) = run(capsys, "stop", *common)
    assert code == 1
    assert result["message"].startswith(f"the state file {state} is damaged or not profwin's (prefix: must be 1-128 characters")
    assert engine.session is None  # a damaged state: its profiler is stopped, as before


def test_a_second_start_into_an_open_session_is_refused_before_the_server_is_asked(
    toy_site: Path, engine: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """SGLang answers a second start 200 and ignores it (the stop then finds nothing of it, and the
    first session's state would be gone): profwin refuses it before anything is sent."""
    common, state = started(capsys, engine)
    first = state.read_bytes()
    code = main(["start", "--engine", "toy", "--url", engine.url, "--window", "1:3", "--out", str(engine.trace_dir)])
    assert code == 2
    assert f"profwin: error: output_dir: a session profwin start began is still open there ({state})" in capsys.readouterr().err
    assert state.read_bytes() == first
    assert engine.session is not None
    assert engine.session["prefix"] == "profwin"
    engine.generate(4)
    stopped_as_started(capsys, common)
