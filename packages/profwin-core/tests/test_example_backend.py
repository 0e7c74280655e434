"""The example backend of docs/plugins.md, end to end: written against ``profwin.plugin`` only,
discovered through its entry point, driven by ``profwin args/start/stop`` and
``profwin.remote_session`` against toyserve, a stand-in engine on 127.0.0.1 (``toy_engine.py``)."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import pytest

import profwin
from profwin.cli import main

HERE = Path(__file__).parent / "example_backend"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_imports_only_the_plugin_api() -> None:
    for path in (HERE / "profwin_toy").glob("*.py"):
        tree = ast.parse(path.read_text())
        modules = {
            n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("profwin")
        }
        modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names if a.name.startswith("profwin")}
        assert modules <= {"profwin.plugin", "profwin.plugin.engines", "profwin.plugin.remote", "profwin_traces"}, (
            path.name,
            modules,
        )  # the trace toolkit: its root only


def test_discovered_and_planned(toy_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (info,) = [p for p in profwin.plugins() if p.name == "toy"]
    assert (info.status, info.distribution) == ("ok", "profwin-toy")
    code, out, _ = run(capsys, "args", "toy", "--window", "3:7", "--json", "--out", str(toy_site))
    assert code == 0
    plan = json.loads(out)
    assert (plan["engine"], plan["version"], plan["version_source"]) == ("toy", "1.2.0", "assumed")
    assert plan["request"] == {"skip": 3, "steps": 4, "prefix": "profwin"}
    code, out, _ = run(capsys, "args", "toy", "--window", "3:7", "--for", "serve", "--out", str(toy_site))
    assert out.splitlines()[0] == f"--trace-dir {toy_site}"
    code, out, err = run(capsys, "args", "toy", "--window", "3:7", "--engine-version", "0.9")
    assert code == 2
    assert "toyserve 0.9 records whole sessions only" in err


def test_engine_version_has_one_form_in_every_command(toy_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--engine-version [ENGINE=]VERSION` means the same in window, args, start and stop."""
    code, out, err = run(capsys, "args", "toy", "--window", "3:7", "--engine-version", "toy=0.9")
    assert code == 2
    assert "toyserve 0.9 records whole sessions only" in err
    code, _, err = run(capsys, "args", "toy", "--window", "3:7", "--engine-version", "vllm=0.32.0")
    assert code == 2
    assert "--engine-version 'vllm=0.32.0' names engine 'vllm', but this command is for 'toy'" in err
    for form in ("toy=0.9", "0.9"):
        code, out, _ = run(capsys, "window", "3:7", "--json", "--engine-version", form)
        assert code == 0
        assert "toyserve 0.9 records whole sessions only" in json.loads(out)["backends"]["toy"]["error"]
    # a usage error is an exit code, like every error (i22: CliParser), not SystemExit
    assert main(["start", "--engine", "toy", "--url", "http://127.0.0.1:9", "--engine-version", "=1"]) == 2
    assert "argument --engine-version: must look like [ENGINE=]VERSION" in capsys.readouterr().err


def test_cli_start_and_stop_in_two_calls(toy_site: Path, engine, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    out_dir = str(engine.trace_dir)
    code, out, _ = run(capsys, "start", "--engine", "toy", "--url", engine.url, "--window", "2:5", "--out", out_dir, "--json")
    assert code == 0, out
    (started,) = json.loads(out)
    assert started["details"]["version_source"] == "server"
    engine.generate(8)
    code, out, _ = run(capsys, "stop", "--engine", "toy", "--url", engine.url, "--out", out_dir, "--json", "--window", "2:5")
    assert code == 0, out
    (stopped,) = json.loads(out)
    (artifact,) = stopped["artifacts"]
    assert artifact["steps"] == "2:5"
    names = [e["name"] for e in json.loads(Path(artifact["path"]).read_text())["traceEvents"]]
    assert names == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    code, out, _ = run(capsys, "stop", "--engine", "toy", "--url", engine.url, "--out", out_dir)
    assert code == 1
    assert "no session started by profwin" in out


def test_remote_session_sync_async_and_restart(toy_site: Path, engine) -> None:  # type: ignore[no-untyped-def]
    spec = profwin.ProfileSpec(window=profwin.Window(1, 3), output_dir=engine.trace_dir)
    with profwin.remote_session("toy", engine.url, spec) as s:
        engine.generate(6)
    assert [a.steps for a in s.artifacts] == [profwin.Window(1, 3)]

    async def run_async() -> profwin.RemoteSession:
        async with profwin.remote_session("toy", [engine.url], spec) as session:
            await asyncio.to_thread(engine.generate, 2)
        return session

    with pytest.warns(profwin.WindowWarning, match=r"ended inside window 1:3; .* holds steps 1:2"):
        partial = asyncio.run(run_async())
    assert [a.steps for a in partial.artifacts] == [profwin.Window(1, 2)]

    left_running = profwin.remote_session("toy", engine.url, spec)
    left_running.start()
    with pytest.raises(profwin.SessionError, match="409"):
        profwin.remote_session("toy", engine.url, spec).start()
    with profwin.remote_session("toy", engine.url, spec, on_active="restart") as s:
        engine.generate(4)
    assert [a.steps for a in s.artifacts] == [profwin.Window(1, 3)]


def test_one_engine_failing_rolls_the_others_back(toy_site: Path, engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    spec = profwin.ProfileSpec(window=profwin.Window(0, 2), output_dir=engine.trace_dir)
    with pytest.raises(profwin.SessionError) as failed:
        profwin.remote_session("toy", [engine.url, dead], spec).start()
    by_target = {r.target: r for r in failed.value.results}
    assert not by_target[engine.url].ok
    assert by_target[engine.url].message == "rolled back: 1 of 2 engine(s) failed to start, so none profiles"
    assert "cannot reach the server" in by_target[dead].message
    assert engine.session is None  # the started engine was stopped again


@pytest.mark.parametrize("damage", ['{"plan": {', "{}", "[1, 2]", '{"plan": {}, "before": {}}'])
def test_damaged_state_is_a_clear_failure(toy_site: Path, engine, capsys: pytest.CaptureFixture[str], damage: str) -> None:  # type: ignore[no-untyped-def]
    """`profwin stop` reads what `profwin start` wrote; a truncated, emptied or foreign state file
    is that engine's failed result (one line), and its profiler is still stopped."""
    out_dir = str(engine.trace_dir)
    assert run(capsys, "start", "--engine", "toy", "--url", engine.url, "--window", "0:2", "--out", out_dir)[0] == 0
    (state,) = (engine.trace_dir / ".profwin-state").iterdir()
    state.write_text(damage)
    code, out, err = run(capsys, "stop", "--engine", "toy", "--url", engine.url, "--out", out_dir)
    assert (code, err) == (1, "")
    assert f"the state file {state} is damaged or not profwin's" in out
    assert engine.session is None
    assert not state.exists()


def test_changed_backend_fields_are_refused(toy_site: Path, engine, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    """Core checks a state's types and directories; the toy backend's ``check_state`` checks the
    prefix its collect trusts: a prefix that matches every file collects nothing."""
    out_dir = str(engine.trace_dir)
    older = engine.trace_dir / "other-1.trace.json"
    older.write_text("{}")
    assert run(capsys, "start", "--engine", "toy", "--url", engine.url, "--window", "0:2", "--out", out_dir)[0] == 0
    (state,) = (engine.trace_dir / ".profwin-state").iterdir()
    data = json.loads(state.read_text())
    data["plan"]["request"]["prefix"] = ""
    data["before"] = {}
    state.write_text(json.dumps(data))
    code, out, err = run(capsys, "stop", "--engine", "toy", "--url", engine.url, "--out", out_dir)
    assert (code, err) == (1, "")
    assert "plan.request.prefix: must be this session's prefix 'profwin'" in out
    assert engine.session is None  # its profiler is still stopped
    assert older.read_text() == "{}"
