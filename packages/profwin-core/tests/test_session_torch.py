"""Session + torch driver on real torch (CPU): the trace holds exactly the window's steps."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from profwin import ConfigError, ProfileSpec, Session, Window
from profwin.demo import count_step_markers
from profwin.errors import ArgumentTypeError, WindowWarning

torch = pytest.importorskip("torch", reason="the torch driver tests need torch (scripts/bootstrap.sh installs a CPU build)")


def markers(session: Session) -> list[list[int]]:
    return [count_step_markers(a.path) for a in session.artifacts]


@pytest.mark.parametrize(
    ("window", "expected"),
    [("0:3", range(0, 3)), ("2:5", range(2, 5)), ("5:", range(5, 10)), ("0:", range(0, 10)), ("9:10", range(9, 10))],
)
def test_window_records_exactly_its_steps(run_loop, spec_in, window: str, expected: range) -> None:  # type: ignore[no-untyped-def]
    session = run_loop(spec_in(window), 10)
    assert markers(session) == [list(expected)]
    (artifact,) = session.artifacts
    assert artifact.steps == Window(expected.start, expected.stop)
    assert artifact.bytes == artifact.path.stat().st_size > 0
    if window.endswith(":"):  # an open-ended window may need parts: its file is named as its first
        assert artifact.path.name.startswith(f"profwin_rank0_w{expected.start}-end_part0001_s{expected.start}-{expected.stop}.")
    else:
        assert artifact.path.name.startswith(f"profwin_rank0_w{expected.start}-{expected.stop}.")
    assert artifact.path.name.endswith(".pt.trace.json.gz")
    assert session.steps == 10


def test_window_past_the_end_writes_the_partial_window(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(WindowWarning, match="closed at step 10, inside window 3:20; the trace holds steps 3:10"):
        session = run_loop(spec_in("3:20"), 10)
    assert markers(session) == [list(range(3, 10))]
    assert session.artifacts[0].steps == Window(3, 10)


@pytest.mark.parametrize("steps", [0, 5, 12])
def test_window_that_never_starts_writes_nothing_and_warns(run_loop, spec_in, tmp_path: Path, steps: int) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(WindowWarning, match=f"window 13:20 was never reached: the session ran {steps} step"):
        session = run_loop(spec_in("13:20"), steps)
    assert session.artifacts == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt])
def test_exception_inside_the_window_keeps_the_trace_and_propagates(run_loop, spec_in, exc: type[BaseException]) -> None:  # type: ignore[no-untyped-def]
    spec = spec_in("2:8")
    with pytest.raises(exc, match="boom at step 5"), pytest.warns(WindowWarning, match="the trace holds steps 2:6"):
        run_loop(spec, 10, fail_at=5, exc=exc)
    (trace,) = spec.output_dir.glob("*.pt.trace.json.gz")
    assert count_step_markers(trace) == [2, 3, 4, 5]  # step 5 ran in part and is kept


def test_two_sessions_in_one_process(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    first = run_loop(spec_in("1:3"), 5)
    second = run_loop(spec_in("2:5"), 5)
    assert markers(first) == [[1, 2]]
    assert markers(second) == [[2, 3, 4]]
    assert first.artifacts[0].path != second.artifacts[0].path


def test_json_format_and_prefix(run_loop, spec_in) -> None:  # type: ignore[no-untyped-def]
    session = run_loop(spec_in("0:2", prefix="run.7", options={"torch": {"format": "json"}}), 3)
    (artifact,) = session.artifacts
    assert artifact.path.name.startswith("run.7_rank0_w0-2.")
    assert artifact.path.name.endswith(".pt.trace.json")
    assert count_step_markers(artifact.path) == [0, 1]


def test_bad_torch_options_fail_before_profiling(spec_in) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=r"options.torch.format: must be one of \['json.gz', 'json'\] \(got 'xml'\)"):
        Session(spec_in("0:2", options={"torch": {"format": "xml"}})).start()
    with pytest.raises(ConfigError, match="did you mean 'format'"):
        Session(spec_in("0:2", options={"torch": {"fromat": "json"}})).start()


def test_cuda_is_recorded_where_there_is_a_device_else_an_error_or_dropped(run_loop, spec_in, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """What the machine has decides: with a CUDA device its kernels are in the window's trace; on
    a CPU-only machine asking for ``cuda`` is an error before anything starts, or dropped with a
    warning. (The suite ran on an H200 with the first branch.)"""
    if torch.cuda.is_available():
        session = run_loop(spec_in("0:2", activities=["cpu", "cuda"]), 3, device="cuda")
        assert markers(session) == [[0, 1]]
        path = session.artifacts[0].path
        with gzip.open(path, "rt") if path.name.endswith(".gz") else path.open() as f:
            events = json.load(f)["traceEvents"]
        assert any(event.get("cat") == "kernel" for event in events)
        return
    with pytest.raises(
        ConfigError, match=r"activities\[1\]: 'cuda' cannot be recorded: torch .* torch.cuda.is_available\(\) == False"
    ):
        Session(spec_in("0:2", activities=["cpu", "cuda"])).start()
    assert list(tmp_path.iterdir()) == []
    with pytest.warns(UserWarning, match="dropping activity 'cuda'"):
        session = run_loop(spec_in("0:2", activities=["cpu", "cuda"], on_unavailable="drop"), 3)
    assert markers(session) == [[0, 1]]
    with pytest.raises(ConfigError, match="none of"), pytest.warns(UserWarning, match="dropping activity 'cuda'"):
        Session(spec_in("0:2", activities=["cuda"], on_unavailable="drop")).start()


def test_export_crash_leaves_no_file_under_the_final_name(
    run_loop, spec_in, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from torch.profiler import profile

    def crash(self: object, path: str) -> None:
        Path(path).write_bytes(b'{"traceEvents": [')  # a truncated export
        raise OSError("disk full")

    monkeypatch.setattr(profile, "export_chrome_trace", crash)
    with pytest.raises(ConfigError, match=r"cannot write '.*/profwin_rank0_w0-2\.\d+\.pt\.trace\.json\.gz': disk full"):
        run_loop(spec_in("0:2"), 3)  # the window closes at step 2 and its export fails
    assert list(tmp_path.iterdir()) == []


def test_non_selected_rank_only_counts(spec_in, tmp_path: Path, recwarn: pytest.WarningsRecorder) -> None:  # type: ignore[no-untyped-def]
    spec = spec_in("0:3", ranks=[1])
    with Session(spec, rank=0) as session:
        for _ in range(5):
            session.step()
    assert not session.active
    assert session.steps == 5
    assert session.artifacts == []
    assert list(tmp_path.iterdir()) == []
    assert not [w for w in recwarn if issubclass(w.category, WindowWarning)]


def test_session_accepts_window_text_and_starts_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    session = Session("0:1")
    assert session.spec.window == Window(0, 1)
    with session:
        session.step()
    assert count_step_markers(session.artifacts[0].path) == [0]
    with pytest.raises(RuntimeError, match="started once"):
        session.start()
    with pytest.raises(ArgumentTypeError, match=r"^spec: must be ProfileSpec \| Window \| str \| None \(got 42\)$"):
        Session(42)  # type: ignore[arg-type]


RANK_SCRIPT = textwrap.dedent(
    """
    import sys, torch, profwin
    spec = profwin.ProfileSpec(window=profwin.Window(1, 3), output_dir=sys.argv[1], ranks=[1])
    with profwin.Session(spec) as s:
        for _ in range(4):
            torch.ones(4).sum()
            s.step()
    print(s.rank, len(s.artifacts))
    """
)


def test_only_the_selected_rank_writes_in_real_processes(tmp_path: Path) -> None:
    procs = []
    for rank in (0, 1):
        env = {**os.environ, "RANK": str(rank)}
        procs.append(
            subprocess.Popen([sys.executable, "-c", RANK_SCRIPT, str(tmp_path)], env=env, stdout=subprocess.PIPE, text=True)
        )
    outputs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outputs == [["0", "0"], ["1", "1"]]
    (trace,) = tmp_path.glob("*.pt.trace.json.gz")
    assert trace.name.startswith("profwin_rank1_w1-3.")
    assert count_step_markers(trace) == [1, 2]


SPAWN_SCRIPT = textwrap.dedent(
    """
    import sys, torch, torch.distributed as dist, torch.multiprocessing as mp, profwin

    def worker(rank, out):
        def spec(window):
            return profwin.ProfileSpec(window=profwin.Window.parse(window), output_dir=out, ranks=[1])

        early = profwin.Session(spec("1:3"))  # made before the process group: its rank is read when it starts
        dist.init_process_group("gloo", init_method=f"file://{out}/store", rank=rank, world_size=2)
        late = profwin.Session(spec("2:4"))
        tensor = torch.ones(4)
        ranks = []
        for session in (early, late):
            with session:
                for _ in range(4):
                    dist.all_reduce(tensor)
                    session.step()
            ranks.append(f"{session.rank}:{len(session.artifacts)}")
        dist.destroy_process_group()
        with open(f"{out}/rank{rank}.txt", "w") as answer:
            answer.write(" ".join(ranks))

    if __name__ == "__main__":
        mp.spawn(worker, args=(sys.argv[1],), nprocs=2)
    """
)


def test_the_rank_is_the_process_groups_without_rank_variables(tmp_path: Path) -> None:
    """torch.multiprocessing.spawn gives each process its rank only through init_process_group
    (no RANK or LOCAL_RANK): a session made before the group records as the group's rank too."""
    script = tmp_path / "spawned.py"
    script.write_text(SPAWN_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK")}
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [(tmp_path / f"rank{rank}.txt").read_text() for rank in (0, 1)] == ["0:0 0:0", "1:1 1:1"]
    early, late = sorted(tmp_path.glob("*.pt.trace.json.gz"))
    assert early.name.startswith("profwin_rank1_w1-3.")
    assert count_step_markers(early) == [1, 2]
    assert late.name.startswith("profwin_rank1_w2-4.")
    assert count_step_markers(late) == [2, 3]


def test_rank_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from profwin import current_rank

    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert current_rank() == 3
    monkeypatch.setenv("RANK", "5")
    assert current_rank() == 5
    assert current_rank(2) == 2
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ConfigError, match="RANK must be an integer in"):
        current_rank()
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("LOCAL_RANK")
    assert current_rank() == 0


def test_spec_output_dir_is_checked_before_profiling(tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="output_dir"):
        Session(ProfileSpec(window=Window(0, 2), output_dir=blocker / "x")).start()


def test_closing_before_the_first_step_ends_writes_nothing(spec_in, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.warns(WindowWarning, match="never reached: the session ran 0 step"), Session(spec_in("0:3")):
        pass
    assert list(tmp_path.iterdir()) == []


FILE_SIZE_LIMITED = """
import resource, sys
import torch
import profwin
from profwin import ConfigError, ProfileSpec, Window

out, limit, fmt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
spec = ProfileSpec(window=Window(1, 3), output_dir=out, prefix="t", options={"torch": {"format": fmt}})
session = profwin.Session(spec)
try:
    with session:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # Python ignores SIGXFSZ: writes fail with EFBIG
        for _ in range(4):
            torch.randn(64, 64) @ torch.randn(64, 64)
            session.step()
except ConfigError as exc:
    print("ERROR", exc)
    sys.exit(2)
print("ARTIFACTS", [(a.path.name, a.bytes) for a in session.artifacts])
"""


@pytest.mark.parametrize("fmt", ["json", "json.gz"])
@pytest.mark.parametrize("limit", [512, 4096])
def test_a_write_cut_by_a_file_size_limit_fails_loudly_naming_the_final_path(tmp_path: Path, fmt: str, limit: int) -> None:
    """A real torch export under RLIMIT_FSIZE (a full disk behaves the same: torch's exporter
    ignores the failed write): never a cut file reported as a trace."""
    done = subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMITED, str(tmp_path), str(limit), fmt],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith(f"ERROR cannot write '{tmp_path}/t_rank0_w1-3."), done.stdout
    assert "ARTIFACTS" not in done.stdout
    assert list(tmp_path.iterdir()) == []  # neither the cut file nor a hidden partial one


def _fresh_process(code: str) -> str:
    """Run ``code`` in a new interpreter (another test may already have paid a one-time cost
    here) and return what it printed; it must succeed."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


# torch 2.13 flags the one-time import of its first ``record_function``; other versions (2.11 on the
# H200 machines) do not have the flag, and the markers alone are checked there.
_CUPTI_CHECKED = "True" if hasattr(torch.autograd.profiler, "_cupti_monitor_checked") else "None"


def test_first_record_function_is_paid_in_the_warm_up_step(tmp_path: Path) -> None:
    """torch 2.13's first ``record_function`` of a process imports ``torch.profiler._cupti_monitor``
    (tens of ms); profwin enters the warm-up step's marker as torch's own ``step()`` does, so that
    import is done before the window's first step, not inside its marker. Fresh process: another
    test may already have paid it here."""
    code = textwrap.dedent(
        f"""
        import torch.autograd.profiler as ap
        import profwin
        from profwin.demo import count_step_markers
        spec = profwin.ProfileSpec(window=profwin.Window(2, 4), output_dir={str(tmp_path)!r}, activities=["cpu"])
        with profwin.Session(spec) as s:
            s.step()  # step 1, the warm-up step, begins: the driver opens
            before = getattr(ap, "_cupti_monitor_checked", None)
            for _ in range(3):  # steps 2 and 3 run; step 4 ends the window
                s.step()
        print(before, count_step_markers(s.artifacts[0].path))
        """
    )
    stdout = _fresh_process(code)
    assert stdout.split(maxsplit=1) == [_CUPTI_CHECKED, "[2, 3]\n"]


def test_window_at_step_0_pays_the_first_record_function_before_recording(tmp_path: Path) -> None:
    """No warm-up step: the first ``record_function``'s one-time import is done while the session
    is entered, before step 0's marker (which must still be the trace's only first marker)."""
    code = textwrap.dedent(
        f"""
        import torch.autograd.profiler as ap
        import profwin
        from profwin.demo import count_step_markers
        spec = profwin.ProfileSpec(window=profwin.Window(0, 2), output_dir={str(tmp_path)!r}, activities=["cpu"])
        with profwin.Session(spec) as s:
            opened = getattr(ap, "_cupti_monitor_checked", None)
            for _ in range(2):
                s.step()
        print(opened, count_step_markers(s.artifacts[0].path))
        """
    )
    stdout = _fresh_process(code)
    assert stdout.split(maxsplit=1) == [_CUPTI_CHECKED, "[0, 1]\n"]


def test_every_prefix_of_a_trace_is_refused_and_the_whole_trace_accepted(tmp_path: Path) -> None:
    """What a failed export leaves is a prefix of the trace (torch's exporter writes through a
    std::ofstream, which writes nothing after a failed write). Every prefix is refused, also the
    ones that end like a whole trace (``]]}`` inside an event's args) or inside a string holding
    brackets and escaped quotes; the whole trace, plain and gzipped, passes."""
    from profwin.torch_driver import _check_complete

    events = [
        {"ph": "X", "name": 'aten::mm "q" [x]} {', "ts": 1, "dur": 2, "args": {"Input Dims": [[64, 64], [64]]}},
        {"ph": "X", "name": "ProfilerStep#2", "ts": 0, "dur": 5, "args": {"Input Dims": [[1]]}},
    ]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events, "traceName": "t"}, indent=2).encode()
    assert b"]]}" in text.replace(b" ", b"").replace(b"\n", b"")  # the cut that ends like a whole trace is among the prefixes
    whole = tmp_path / "whole.json"
    whole.write_bytes(text)
    _check_complete(whole, whole, gz=False)
    (tmp_path / "whole.json.gz").write_bytes(gzip.compress(text))
    _check_complete(tmp_path / "whole.json.gz", whole, gz=True)
    cut = tmp_path / "cut.json"
    for end in range(len(text.rstrip())):
        cut.write_bytes(text[:end])
        with pytest.raises(ConfigError, match="cut short"):
            _check_complete(cut, whole, gz=False)
