"""Fan-out wholeness and the state file as untrusted input, on core's remote session.

The targets here are engine targets written in this file (core's ``EngineTarget`` contract): what
a third-party backend can do wrong — plan with an answer it cannot parse, raise from ``start``,
call ``sys.exit`` — cannot be made to happen on demand with a real engine. Files are real, in
``tmp_path``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from profwin import ConfigError, ProfileSpec, Window, WindowWarning
from profwin.cli import main
from profwin.engine import EnginePlan, TargetContext
from profwin.errors import Terminated
from profwin.protocols import Artifact
from profwin.runtime.remote import RemoteSession, SessionError, is_session_prefix

TOY = Path(__file__).parent / "example_backend"


class Target:
    """A target that records its calls; ``fail`` names the call that goes wrong and how."""

    def __init__(self, name: str, calls: list[str], fail: dict[str, Callable[[], Any]] | None = None) -> None:
        self.name = name
        self.calls = calls
        self.fail = fail or {}

    def _maybe(self, what: str) -> None:
        self.calls.append(f"{what} {self.name}")
        if what in self.fail:
            self.fail[what]()

    def plan(self, spec: ProfileSpec, version: str | None, ctx: TargetContext) -> EnginePlan:
        self._maybe("plan")
        return EnginePlan(
            engine="t", version="1.0", version_source="given", mechanism="per-session", window=spec.window,
            records=spec.window, output_dir=spec.output_dir, details={"prefix": spec.prefix},
        )  # fmt: skip

    def start(self, plan: EnginePlan, ctx: TargetContext) -> None:
        self._maybe("start")

    def stop(self, plan: EnginePlan, ctx: TargetContext) -> bool:
        self._maybe("stop")
        return True

    def collect(self, plan: EnginePlan, files: Callable[[], list[Path]], *, stopped: bool) -> tuple[list[Artifact], list[str]]:
        self._maybe("collect")
        for path in files():  # what SGLang's collect does to files it finds: trim or delete
            path.unlink()
        return [], []


class Engine:
    """The backend's own check of a state's plan: the file prefix its collect acts on."""

    name = "t"

    def check_state(self, plan: EnginePlan, spec: ProfileSpec) -> None:
        if plan.details.get("prefix") == "bug":
            raise KeyError("the backend's own bug")
        if not is_session_prefix(plan.details.get("prefix"), spec):
            raise ConfigError(f"must be this session's prefix {spec.prefix!r}", path="details.prefix")


def _huge_int() -> None:
    int("9" * 5000)  # a 5000-digit version a backend tried to parse: ValueError


def _bug() -> None:
    raise ZeroDivisionError("division by zero in the backend")


def _exit() -> None:
    sys.exit(3)


def session(tmp_path: Path, *targets: Target) -> RemoteSession:
    spec = ProfileSpec(window=Window(2, 5), output_dir=tmp_path, prefix="s")
    return RemoteSession(Engine(), list(targets), spec, timeout=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("stage", "fault", "said"), [
    ("plan", _huge_int, "ValueError: Exceeds the limit (4300 digits)"),
    ("start", _bug, "ZeroDivisionError: division by zero in the backend"),
])  # fmt: skip
@pytest.mark.parametrize("check", [True, False], ids=["remote_session", "profwin-start"])
def test_one_bad_target_is_its_own_failed_result_and_the_others_roll_back(
    tmp_path: Path, stage: str, fault: Callable[[], None], said: str, check: bool
) -> None:
    calls: list[str] = []
    good, bad = Target("good", calls), Target("bad", calls, {stage: fault})
    s = session(tmp_path, good, bad)
    if check:
        with pytest.raises(SessionError) as caught:
            s.start()
        results = caught.value.results
    else:
        results = s.start(check=False)
    assert [r.target for r in results] == ["good", "bad"]
    assert not results[1].ok
    assert results[1].message.startswith(f"failed unexpectedly ({said}")
    assert not results[0].ok
    assert results[0].message == "rolled back: 1 of 2 engine(s) failed to start, so none profiles"
    assert "stop good" in calls  # the healthy engine does not keep profiling
    assert "stop bad" not in calls
    assert s.save_state() == []  # nothing left for profwin stop


def test_sys_exit_or_ctrl_c_in_one_backend_stops_the_started_ones_and_propagates(tmp_path: Path) -> None:
    for fault, raised in ((_exit, SystemExit), (lambda: (_ for _ in ()).throw(KeyboardInterrupt), KeyboardInterrupt)):
        calls: list[str] = []
        good = Target("good", calls)
        slow = Target("slow", calls, {"start": fault})
        with pytest.raises(raised):
            session(tmp_path, good, slow).start()
        assert "stop good" in calls, calls


def _started(tmp_path: Path) -> tuple[RemoteSession, Path]:
    calls: list[str] = []
    s = session(tmp_path, Target("http://h:1", calls))
    s.start()
    [state] = s.save_state()
    return s, state


def _resumed(tmp_path: Path) -> tuple[RemoteSession, list[str]]:
    calls: list[str] = []
    s = session(tmp_path, Target("http://h:1", calls))
    s._resume()
    return s, calls


def test_the_state_file_is_written_atomically_and_never_through_a_symlink(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    _, state = _started(tmp_path)
    state.unlink()
    state.symlink_to(victim)
    with pytest.raises(ConfigError, match="it is a symbolic link"):
        _started(tmp_path)
    assert victim.read_text() == "keep me"
    assert not [p for p in state.parent.iterdir() if p.name.startswith(".")]  # no partial file left


@pytest.mark.parametrize(
    "tamper", ["outside", "parent", "deep", "huge", "dev-zero", "fifo", "before-path", "types", "details", "backend-bug"]
)
def test_a_tampered_state_file_is_refused_before_anything_acts_on_it(tmp_path: Path, tamper: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    precious = elsewhere / "s-precious.trace.json.gz"
    precious.write_bytes(b"data")
    own = out / "s-mine.trace.json.gz"
    own.write_bytes(b"mine")
    _, state = _started(out)
    data = json.loads(state.read_text())
    if tamper == "outside":
        data["plan"]["output_dir"] = str(elsewhere)
        data["before"] = {}
    elif tamper == "parent":
        data["plan"]["output_dir"] = str(out / "..")
    elif tamper == "before-path":
        data["before"] = {"../elsewhere/s-precious.trace.json.gz": 1}
    elif tamper == "types":
        data["before"] = {"x": "1"}
    elif tamper == "details":  # a prefix matching every file: the backend refuses it
        data["plan"]["details"]["prefix"] = ""
        data["before"] = {}
    elif tamper == "backend-bug":
        data["plan"]["details"]["prefix"] = "bug"
    state.unlink()
    if tamper == "deep":
        state.write_text("[" * 100_000 + "]" * 100_000)
    elif tamper == "huge":
        with open(state, "wb") as f:
            f.truncate(600 << 20)  # sparse: 600 MB that cost no disk
    elif tamper == "dev-zero":
        state.symlink_to("/dev/zero")
    elif tamper == "fifo":
        os.mkfifo(state)
    else:
        state.write_text(json.dumps(data))
    s, calls = _resumed(out)
    [result] = s.stop()
    assert not result.ok
    assert "is damaged or not profwin's" in result.message, result.message
    assert result.message.endswith(
        f"stopped its profiler, collected no files; the engine writes its trace in {out} (look there for what it recorded)"
    )
    if tamper == "details":
        assert "plan.details.prefix: must be this session's prefix 's'" in result.message
    if tamper == "backend-bug":
        assert "backend 't' could not check it: failed unexpectedly (KeyError" in result.message
    assert len(result.message) < 1000
    assert "collect http://h:1" not in calls  # nothing collected, trimmed or deleted
    assert precious.read_bytes() == b"data"
    assert own.read_bytes() == b"mine"


def test_an_untampered_state_file_still_works(tmp_path: Path) -> None:
    _started(tmp_path)
    (tmp_path / "s-new.trace.json.gz").write_bytes(b"x")
    s, calls = _resumed(tmp_path)
    with pytest.warns(WindowWarning, match="nothing was recorded: the engine wrote 1 bytes in .* but no trace of window 2:5"):
        [result] = s.stop()
    assert result.ok, result.message
    assert calls == ["stop http://h:1", "collect http://h:1"]
    assert not (tmp_path / "s-new.trace.json.gz").exists()  # the session's own new file, collected


# -- a local failure after an engine started: the same all or none (issue 35, class 2) ----------
# Real toyserve engines on 127.0.0.1 (docs/plugins.md's example backend) and real files; the
# faults are local: the state folder, a file-size limit, profwin's own code, a signal.


def _started_engines(engines: list[Any]) -> list[bool]:
    """Which engines profile now (a stopped session has written its one file)."""
    return [e.session is not None for e in engines]


@pytest.mark.parametrize("fault", ["state folder is a file", "state folder is a symlink", "state file is a folder"])
def test_profwin_start_checks_where_the_state_goes_before_any_engine_starts(
    toy_site: Path, toy_engines: Callable[[int], list[Any]], capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    engines = toy_engines(2)
    out = engines[0].trace_dir
    state = out / ".profwin-state"
    if fault == "state folder is a file":
        state.write_text("not a folder")
    elif fault == "state folder is a symlink":
        (out.parent / "elsewhere").mkdir()
        state.symlink_to(out.parent / "elsewhere")
    else:
        from profwin.runtime.remote import state_path

        state_path(ProfileSpec(output_dir=out), "toy", engines[1].url).mkdir(parents=True)
    code = main(["start", "--engine", "toy", *(f"--url={e.url}" for e in engines), "--window", "1:3", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "cannot keep the session's state for profwin stop" in err or "it is a directory" in err
    assert _started_engines(engines) == [False, False]
    assert [e.files for e in engines] == [0, 0]  # never started (a start, then a stop, writes a file)


def test_a_state_that_cannot_be_saved_after_the_start_rolls_back(toy_site: Path, toy_engines: Callable[[int], list[Any]]) -> None:
    """``profwin start`` under a file-size limit of 0 (a full disk, as far as it can tell): the
    engines start, then the state cannot be written; both are stopped and say why."""
    engines = toy_engines(2)
    out = engines[0].trace_dir
    env = dict(
        os.environ,
        PROFWIN_TRACEBACK="1",
        PYTHONPATH=os.pathsep.join([str(toy_site / "site"), str(TOY), os.environ.get("PYTHONPATH", "")]),
    )
    script = "import resource, signal, sys; from profwin.cli import main\n"
    script += "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))\n"
    script += "sys.exit(main(sys.argv[1:]))"
    argv = ["start", "--engine", "toy", *(f"--url={e.url}" for e in engines), "--window", "1:3", "--out", str(out), "--json"]
    done = subprocess.run(
        [sys.executable, "-c", script, *argv], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout, repr(done.stderr)
    results = json.loads(done.stdout)
    assert [r["ok"] for r in results] == [False, False]
    for r in results:
        assert r["message"].startswith("rolled back: saving the session's state for profwin stop failed (cannot write "), r
        assert "File too large" in r["message"]
        assert r["details"]["rolled_back"]
    assert _started_engines(engines) == [False, False]  # stopped again
    assert [e.files for e in engines] == [1, 1]
    assert not [p for p in (out / ".profwin-state").iterdir()]  # no state, no partial file


@pytest.mark.parametrize("fault", [ZeroDivisionError, Terminated, KeyboardInterrupt])
def test_a_crash_or_a_signal_after_the_start_rolls_back(
    toy_site: Path, toy_engines: Callable[[int], list[Any]], fault: type[BaseException]
) -> None:
    """A failure in profwin's own code after the engines started (here: making the router's
    record), or SIGTERM (``Terminated``) or Ctrl-C arriving there: the engines are stopped and the
    state already written is removed; an error is each engine's result, a signal goes on."""
    from profwin.runtime.remote import start_remote

    engines = toy_engines(2)
    spec = ProfileSpec(window=Window(1, 3), output_dir=engines[0].trace_dir)
    record = spec.output_dir / ".profwin-state" / "extra.json"

    def fail(results: list[Any]) -> dict[str, Any]:
        assert _started_engines(engines) == [True, True]
        raise fault("in profwin's own code")

    if issubclass(fault, Exception):
        results = start_remote("toy", [e.url for e in engines], spec, record=(record, fail))
        assert [r.ok for r in results] == [False, False]
        assert all(
            r.message == "rolled back: saving the session's state for profwin stop failed "
            "(failed unexpectedly (ZeroDivisionError: in profwin's own code)), so none profiles"
            for r in results
        )
    else:
        with pytest.raises(fault):
            start_remote("toy", [e.url for e in engines], spec, record=(record, fail))
    assert _started_engines(engines) == [False, False]
    assert sorted(p.name for p in record.parent.iterdir()) == []  # the targets' states are removed too


def test_warnings_as_errors_in_start_stop_the_started_engines(tmp_path: Path) -> None:
    calls: list[str] = []

    class Noted(Target):
        def plan(self, spec: ProfileSpec, version: str | None, ctx: TargetContext) -> EnginePlan:
            return super().plan(spec, version, ctx).replace(notes=("a window this engine cannot keep exactly",))

    s = session(tmp_path, Noted("a", calls), Noted("b", calls))
    with warnings.catch_warnings():
        warnings.simplefilter("error", WindowWarning)
        with pytest.raises(WindowWarning, match="cannot keep exactly"):
            s.start()
    assert {"stop a", "stop b"} <= set(calls)
    assert all(r.message.startswith("rolled back: reporting the start failed") for r in s.results)
