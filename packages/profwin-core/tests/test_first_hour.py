"""What a new user types in the first hour does what the docs say (issue 39): one precedence rule
for the spec file and the command line, a reason whenever nothing is recorded, one line per error.

Real runs: the ``profwin`` command in a subprocess (the demo on real torch) or through
:func:`profwin.cli.main`; the remote stop against toyserve (the example backend's engine)."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

import profwin
from profwin.cli import _spec_from_args, build_parser, main
from profwin.engine import EnginePlan
from profwin.runtime.remote import nothing_recorded
from profwin.window import Window


def profwin_cli(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "profwin", *argv], cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def spec_commands() -> list[str]:
    """Every command that takes a spec file and values that override it (found in the parser)."""
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(name for name, p in sub.choices.items() if any("--spec" in a.option_strings for a in p._actions))


def required(command: str) -> list[str]:
    return {
        "args": ["vllm"],
        "start": ["--engine", "toy", "--url", "http://x"],
        "stop": ["--engine", "toy", "--url", "http://x"],
    }.get(command, [])


def test_every_spec_command_is_known_here() -> None:
    assert spec_commands() == ["args", "demo", "start", "stop"]


@pytest.mark.parametrize("command", spec_commands())
def test_a_value_given_overrides_the_spec_file_and_a_default_never_does(command: str, tmp_path: Path) -> None:
    spec_file = tmp_path / "s.yaml"
    spec_file.write_text('window: "5:15"\nprefix: fromfile\noutput_dir: out\n')
    parse = build_parser().parse_args
    from_file = _spec_from_args(parse([command, *required(command), "--spec", str(spec_file)]))
    assert (str(from_file.window), from_file.prefix, from_file.output_dir) == ("5:15", "fromfile", tmp_path / "out")
    given = _spec_from_args(
        parse([command, *required(command), "--spec", str(spec_file), "--window", "2:4", "--prefix", "p", "--out", str(tmp_path)])
    )
    assert (str(given.window), given.prefix, given.output_dir) == ("2:4", "p", tmp_path)
    alone = _spec_from_args(parse([command, *required(command)]))
    assert alone.window == (Window(20, 80) if command == "demo" else Window())  # the command's own default, with no file


def test_the_demo_records_the_spec_files_window(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text('window: "5:15"\n')
    done = profwin_cli("demo", "--steps", "30", "--spec", "s.yaml", "--quiet", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)
    assert (result["steps_recorded"], result["recorded"], result["reason"]) == (10, [5, 14], None)


def test_the_demo_records_in_a_shell_that_exports_a_rank(tmp_path: Path) -> None:
    """A pod of a Kubeflow PyTorchJob, or a shell inside a torchrun or Slurm job, exports RANK:
    the demo (one process) records there, its trace named by that rank, and its whole-run trace
    says the same rank."""
    done = profwin_cli(
        "demo", "--steps", "30", "--window", "5:15", "--compare-full", "--quiet", "--json", cwd=tmp_path, env={"RANK": "3"}
    )
    assert done.returncode == 0, done.stderr
    windowed, full = json.loads(done.stdout)
    assert (windowed["steps_recorded"], windowed["recorded"], windowed["reason"]) == (10, [5, 14], None)
    (trace,) = (tmp_path / "profwin-traces").glob("profwin_rank*.pt.trace.json.gz")
    assert trace.name.startswith("profwin_rank3_w5-15.")
    with gzip.open(full["artifacts"][0]["path"], "rt") as text:
        assert json.load(text)["profwin"]["rank"] == 3


def test_the_demo_says_why_nothing_was_recorded(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("ranks: [1]\n")  # a spec file's ranks hold: this process is rank 0
    done = profwin_cli("demo", "--steps", "30", "--window", "5:15", "--spec", "s.yaml", "--quiet", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("profwin: nothing was recorded: rank 0 is not selected: the spec records rank(s) 1 only")
    done = profwin_cli("demo", "--steps", "30", "--window", "5:15", "--spec", "s.yaml", "--quiet", "--json", cwd=tmp_path)
    (result,) = json.loads(done.stdout)
    assert done.returncode == 1
    assert result["steps_recorded"] == 0
    assert result["reason"].startswith("rank 0 is not selected")
    done = profwin_cli("demo", "--steps", "4", "--window", "5:15", "--quiet", "--json", cwd=tmp_path)
    (result,) = json.loads(done.stdout)
    assert "window 5:15 was never reached: the session ran 4 step(s) (the last was step 3)" in result["reason"]


def test_the_demo_says_when_the_run_ends_inside_the_window(tmp_path: Path) -> None:
    done = profwin_cli("demo", "--steps", "5", "--window", "3:9", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "window:          3:9 (the run ends inside it: steps 3:5 recorded; --steps 9 runs it whole)"
    assert lines[2].startswith("steps recorded:  2 (expected 2; markers 3..4)")
    done = profwin_cli("demo", "--steps", "9", "--window", "3:9", "--quiet", cwd=tmp_path)
    assert done.stdout.splitlines()[1] == "window:          3:9"
    done = profwin_cli("demo", "--steps", "5", "--window", "3:", "--quiet", cwd=tmp_path)  # open: it ends with the run
    assert done.stdout.splitlines()[1] == "window:          3:"


def test_the_session_keeps_the_reason(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with profwin.Session(profwin.ProfileSpec(window=Window(3, 5), output_dir=tmp_path), rank=2) as s:
            s.step()
    assert s.artifacts == []
    assert s.nothing_recorded is not None
    assert s.nothing_recorded.startswith("rank 2 is not selected")


def test_the_demo_refuses_an_output_file_before_importing_torch(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    code = "import sys, profwin.cli as c; r = c.main(['demo', '--out', 'afile']); print(r, 'torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.stdout.split() == ["2", "False"]
    assert "output_dir: must be a writable directory" in done.stderr


def test_the_demo_says_what_it_does_before_the_slow_import(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "profwin", "demo", "--steps", "3", "--window", "1:2"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()
    still_running = proc.poll() is None
    proc.communicate(timeout=600)
    assert first.startswith("profwin demo: profiling window 1:2 of 3 decode steps")
    assert still_running or proc.returncode == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["window", "-5:10"], "profwin: error: argument WINDOW: window start must be a non-negative integer or empty (got '-5' in '-5:10') (see: profwin window --help)"),
        (["window", "5:3"], "profwin: error: argument WINDOW: window end must be > window start (got window start=5, window end=3) (see: profwin window --help)"),
        (["demo", "--window", "-1:4"], "profwin: error: argument --window: window start must be a non-negative integer or empty (got '-1' in '-1:4') (see: profwin demo --help)"),
        (["nope"], "(see: profwin --help)"),
        (["args", "npu"], "profwin: error: 'npu' is a profiler (profwin-npu "),
        (["args", "vllm", "--at", "a.b"], "profwin: error: --at: selects a block of the spec file: give the file with --spec"),
    ],
)  # fmt: skip
def test_every_error_is_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert message in err


def test_a_whole_trainer_file_is_read_with_at(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trainer = tmp_path / "trainer.yaml"
    trainer.write_text(
        "global_profiler: {tool: torch, steps: [2], save_path: prof}\n"
        "actor_rollout_ref: {rollout: {profiler: {tool: torch, enable: true, tool_config: {torch: "
        "{contents: [cpu], discrete: true, profile_token_start: 20, profile_token_end: 80}}}}}\n"
    )
    assert main(["args", "vllm", "--spec", str(trainer)]) == 2
    assert "choose a block with --at, e.g. 'actor_rollout_ref.rollout.profiler'" in capsys.readouterr().err
    assert main(["args", "vllm", "--spec", str(trainer), "--at", "actor_rollout_ref.rollout.profiler", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["window"] == "20:80 tokens"


def test_args_stdout_is_what_to_paste_and_the_condition_is_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["args", "sglang", "--window", "20:80"]) == 0
    out, err = capsys.readouterr()
    body = json.loads(out)  # the request a stock server honours, and nothing else
    assert body["num_steps"] == 80
    assert "start_step" not in body
    plan = profwin.backend("sglang").plan(profwin.ProfileSpec(window=Window(20, 80)))
    assert plan.alternative is not None
    assert any(line.startswith(f"# with {plan.alternative['needs']}: send ") for line in err.splitlines()), err
    assert any("profwin trim TRACE --window 20:80" in line for line in err.splitlines()), err
    assert main(["args", "sglang", "--window", "20:80", "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["alternative"]["needs"] == plan.alternative["needs"]
    assert described["alternative"]["request"]["start_step"] == plan.alternative["request"]["start_step"]
    # A plan that needs something where the engine runs says so on stderr too (vLLM's token window).
    assert main(["args", "vllm", "--window", "20:80 tokens"]) == 0
    out, err = capsys.readouterr()
    vllm = profwin.backend("vllm").plan(profwin.ProfileSpec(window=Window.parse("20:80 tokens")))
    assert f"# needs: {vllm.server_requirement}" in err.splitlines()
    assert f"# without it: {vllm.fallback}" in err.splitlines()
    assert not any(line.startswith("#") for line in out.splitlines())


def _plan(window: str) -> EnginePlan:
    w = Window.parse(window)
    return EnginePlan(
        engine="toy", version="1.2.0", version_source="given", window=w, records=w, mechanism="per-session", output_dir=Path("/d")
    )


def test_the_reason_for_no_trace_is_the_most_certain_one() -> None:
    plan = _plan("5:9")
    assert nothing_recorded(plan, [], written=0, ran=None, engine_error="CUDA error: out of memory") == (
        "the engine reported an error: CUDA error: out of memory"
    )
    assert nothing_recorded(plan, [], written=0, ran=3, engine_error=None) == (
        "window 5:9 was never reached: the engine ran 3 step(s) in this session (the last step seen was step 2); "
        "recording starts at step 5"
    )
    assert "wrote no trace in /d: it writes elsewhere" in str(nothing_recorded(plan, [], written=0, ran=12))
    assert "the engine wrote 10 bytes in /d since the start, but no trace" in str(
        nothing_recorded(plan, [], written=10, ran=None)
    )
    assert "never reached" in str(nothing_recorded(plan, [], written=0, ran=None))


def test_stop_says_on_one_line_why_nothing_was_recorded(
    toy_site: Path,
    engine,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """toyserve writes its traces where it was launched to (engine.trace_dir); profwin is told
    another folder, so it finds none there: the stop says so on one line, in text and JSON."""
    elsewhere = tmp_path / "elsewhere"
    for as_json in (False, True):
        assert main(["start", "--engine", "toy", "--url", engine.url, "--window", "2:5", "--out", str(elsewhere)]) == 0
        engine.generate(8)
        capsys.readouterr()
        code = main(
            ["stop", "--engine", "toy", "--url", engine.url, "--window", "2:5", "--out", str(elsewhere)] + ["--json"] * as_json
        )
        out, err = capsys.readouterr()
        assert code == 1
        reason = f"no trace was written for window 2:5: it was never reached (the engine ran fewer than 3 step(s) in this session), or the engine writes elsewhere than {elsewhere}"
        if as_json:
            (result,) = json.loads(out)
            assert result["details"]["nothing_recorded"] == reason
        else:
            assert err.splitlines() == [f"profwin: nothing was recorded on {engine.url}: {reason}"]
    assert len(list(engine.trace_dir.glob("*.trace.json"))) == 2  # the engine did write, elsewhere


def test_validate_exits_2_for_a_file_it_cannot_read_and_1_for_a_wrong_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2
    assert (
        capsys.readouterr().err
        == f"profwin: error: cannot read spec file '{tmp_path / 'missing.yaml'}': No such file or directory\n"
    )
    (tmp_path / "bad.yaml").write_text('window: "9:3"\n')
    assert main(["validate", str(tmp_path / "bad.yaml")]) == 1


_STARTUP = """
import sys, time, torch, profwin
spec = profwin.ProfileSpec(window=profwin.Window(0, 2), output_dir=sys.argv[1])
started = time.process_time()
with profwin.Session(spec) as session:
    opened = time.process_time() - started
    for _ in range(3):
        torch.randn(8, 8).matmul(torch.randn(8, 8))
        session.step()
print(len(session.artifacts), "torch._dynamo" in sys.modules, "torch._inductor" in sys.modules, "_inductor" in torch._lazy_modules, opened)
"""


@pytest.mark.torch
def test_the_first_window_does_not_import_inductor(tmp_path: Path) -> None:
    """torch's prepare_trace() imports torch._inductor and torch._dynamo through hasattr (3 CPU s
    on a 2-core machine); profwin's driver records the same window without them."""
    done = subprocess.run([sys.executable, "-c", _STARTUP, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    files, dynamo, inductor, lazy_again, opened = done.stdout.split()
    assert (files, dynamo, inductor, lazy_again) == ("1", "False", "False", "True")
    assert float(opened) < 1.0  # CPU seconds to open the first window; torch's own way takes about 3


_PLUGIN = """
from profwin.plugin import checked, warn

@checked
def enable(spec: str) -> None:
    _guard(spec)

def _guard(spec):
    warn(f"left alone: {spec}", RuntimeWarning)
"""


def test_a_plugins_warning_points_at_the_users_line() -> None:
    # A plugin module (profwin_*) warning two of its own frames down, under its argument check:
    # the warning is at the line that called the plugin, not inside the plugin or profwin.
    plugin = types.ModuleType("profwin_mything")
    exec(compile(_PLUGIN, "profwin_mything.py", "exec"), plugin.__dict__)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        here = sys._getframe().f_lineno + 1
        plugin.enable("2:6")
    (w,) = caught
    assert (w.filename, w.lineno) == (__file__, here)
