"""The npu driver against the torch_npu STAND-IN (tests/conftest.py), driven by a real profwin.Session.

What is checked: the keyword arguments handed to torch_npu, the window semantics (which step
markers were open while torch_npu recorded), and finding the ``*_ascend_pt`` folder. The real
torch_npu runs only in test_npu_real.py, on an Ascend machine.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import profwin
import profwin.plugin
from profwin import ConfigError, PluginError, ProfileSpec, Session, Window
from profwin.errors import WindowWarning
from profwin_npu import NpuProfiler, analyse

# The fixture's state object (conftest.StandIn); conftest is not importable under importlib mode.
StandIn = Any


def activity(state: StandIn, name: str) -> Any:
    return getattr(state.modules["torch_npu.profiler"].ProfilerActivity, name)


def spec_for(tmp_path: Path, window: str, **kw: Any) -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), output_dir=tmp_path, **kw)


def run(spec: ProfileSpec, steps: int, *, fail_at: int | None = None) -> Session:
    """A decode loop of ``steps`` steps (raising inside step ``fail_at``) under a session."""
    session = Session(spec, profiler=NpuProfiler())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WindowWarning)
        try:
            with session:
                for k in range(steps):
                    if k == fail_at:
                        raise KeyboardInterrupt
                    session.step()
        except KeyboardInterrupt:
            pass
    return session


def drive(session: Session, steps: int) -> None:
    """Run ``steps`` steps of an empty loop inside ``session``."""
    with session:
        for _ in range(steps):
            session.step()


def recorded_steps(folder: Path) -> list[int]:
    """Steps whose ProfilerStep marker the stand-in saw while recording."""
    steps: list[int] = json.loads((folder / "FRAMEWORK" / "steps.json").read_text())
    return steps


def folders(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.glob("*_ascend_pt"))


# -- the arguments handed to torch_npu ----------------------------------------------------------


def test_kwargs_for_a_bounded_window(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    spec = spec_for(tmp_path, "20:80", shapes=True, modules=True, prefix="roll", options={"npu": {"level": "level1"}})
    run(spec, 100)
    (prof,) = torch_npu_standin.called("profile")
    assert prof["activities"] == [activity(torch_npu_standin, "CPU"), activity(torch_npu_standin, "NPU")]
    assert (prof["record_shapes"], prof["profile_memory"], prof["with_stack"]) == (True, False, False)
    assert (prof["with_flops"], prof["with_modules"]) == (False, True)
    # Opened one step early: one warm-up step, 60 active, evaluated at session step numbers.
    assert torch_npu_standin.called("schedule") == [dict(wait=0, active=60, warmup=1, repeat=1, skip_first=19)]
    assert torch_npu_standin.called("tensorboard_trace_handler") == [
        dict(dir_name=str(tmp_path), worker_name="roll_rank0_w20-80", analyse_flag=False, async_mode=False)
    ]
    (config,) = torch_npu_standin.called("_ExperimentalConfig")
    assert config["profiler_level"] == "Level1"
    assert config["aic_metrics"] == "ACL_AICORE_PIPE_UTILIZATION"
    assert (config["export_type"], config["data_simplification"], config["l2_cache"]) == (["text"], True, False)
    assert (config["mstx"], config["msprof_tx"]) == (False, False)  # the new name, not the deprecated one
    assert not any("WARNING" in line for line in torch_npu_standin.printed)


def test_kwargs_with_every_option(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    options = {
        "level": "level2", "aic_metrics": "memory_ub", "l2_cache": True, "data_simplification": False,
        "export_type": ["db", "text"], "analysis": True, "mstx": True, "mstx_domain_exclude": ["communication"],
    }  # fmt: skip
    run(spec_for(tmp_path, "1:3", memory=True, stack=True, flops=True, options={"npu": options}), 4)
    (config,) = torch_npu_standin.called("_ExperimentalConfig")
    assert config["profiler_level"] == "Level2"
    assert config["aic_metrics"] == "ACL_AICORE_MEMORY_UB"
    assert (config["l2_cache"], config["data_simplification"], config["mstx"]) == (True, False, True)
    assert config["export_type"] == ["text", "db"]
    assert config["mstx_domain_exclude"] == ["communication"]
    assert torch_npu_standin.called("tensorboard_trace_handler")[0]["analyse_flag"] is True
    (prof,) = torch_npu_standin.called("profile")
    assert (prof["profile_memory"], prof["with_stack"], prof["with_flops"]) == (True, True, True)


def test_older_torch_npu_gets_msprof_tx(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    import torch_npu

    class OldConfig:  # torch_npu before `mstx` existed
        def __init__(self, profiler_level: str = "Level0", aic_metrics: str = "", l2_cache: bool = False,
                     msprof_tx: bool = False, data_simplification: bool = True, export_type: Any = "text") -> None:  # fmt: skip
            torch_npu_standin.calls.append(("old_config", {"msprof_tx": msprof_tx}))

    torch_npu.profiler._ExperimentalConfig = OldConfig
    run(spec_for(tmp_path, "1:2", options={"npu": {"mstx": True}}), 3)
    assert torch_npu_standin.called("old_config") == [{"msprof_tx": True}]
    with pytest.raises(PluginError, match="mstx_domain_include needs a newer torch_npu"):
        run(spec_for(tmp_path, "1:2", options={"npu": {"mstx": True, "mstx_domain_include": ["a"]}}), 3)


def test_cpu_only_still_passes_the_experimental_config(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    # torch_npu would otherwise build a default one that warns about resetting AI Core metrics
    # (seen running torch_npu's real code: integration_tests/npu).
    run(spec_for(tmp_path, "1:2", activities=["cpu"]), 3)
    (prof,) = torch_npu_standin.called("profile")
    assert prof["activities"] == [activity(torch_npu_standin, "CPU")]
    (config,) = torch_npu_standin.called("_ExperimentalConfig")
    assert config["aic_metrics"] == "ACL_AICORE_NONE"


def test_unbounded_window_uses_a_schedule_that_never_ends(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    session = run(spec_for(tmp_path, "3:", part_steps=None, part_events=None), 10)
    (sched,) = torch_npu_standin.called("schedule")
    assert (sched["skip_first"], sched["warmup"], sched["active"] >= 2**62) == (2, 1, True)
    (art,) = session.artifacts
    assert art.steps == Window(3, 10)
    assert recorded_steps(art.path) == list(range(3, 11))  # 10: the marker opened at close, see docs


def test_window_at_step_zero_has_no_warm_up(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    session = run(spec_for(tmp_path, "0:3"), 5)
    assert torch_npu_standin.called("schedule") == [dict(wait=0, active=3, warmup=0, repeat=1, skip_first=0)]
    assert recorded_steps(session.artifacts[0].path) == [0, 1, 2]


# -- window semantics through a real profwin.Session --------------------------------------------


def test_records_exactly_start_to_end_minus_one(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    session = run(spec_for(tmp_path, "4:7"), 12)
    (art,) = session.artifacts
    assert recorded_steps(art.path) == [4, 5, 6]
    assert (art.steps, art.kind, art.producer, art.rank) == (Window(4, 7), "ascend-pt", "npu", 0)
    assert art.path.parent == tmp_path
    assert art.path.name.startswith(f"profwin_rank0_w4-7_{os.getpid()}_")
    assert art.bytes == sum(f.stat().st_size for f in art.path.rglob("*") if f.is_file()) > 0
    # Prepared during step 3 (warm-up), recording from step 4, saved when step 7 begins.
    transits = [(c["from"].name, c["to"].name if c["to"] else None, c["step"]) for c in torch_npu_standin.called("transit")]
    assert transits[:2] == [("NONE", "WARMUP", 3), ("WARMUP", "RECORD", 4)]
    assert ("RECORD_AND_SAVE", "NONE", 7) in transits
    assert not any("Stop profiler" in line for line in torch_npu_standin.printed)  # a clean end, no warnings


def test_loop_ending_inside_the_window_keeps_what_ran(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    session = Session(spec_for(tmp_path, "2:10"), profiler=NpuProfiler())
    with pytest.warns(WindowWarning, match="inside window 2:10"):
        drive(session, 5)
    (art,) = session.artifacts
    assert art.steps == Window(2, 5)
    # Step 5's marker opened at the last boundary before the loop ended: empty, but in the data.
    assert recorded_steps(art.path) == [2, 3, 4, 5]


def test_exception_inside_the_window_keeps_the_failing_step(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    session = run(spec_for(tmp_path, "2:10"), 20, fail_at=6)
    (art,) = session.artifacts
    assert art.steps == Window(2, 7)
    assert recorded_steps(art.path) == [2, 3, 4, 5, 6]


def test_loop_ending_in_warm_up_writes_nothing(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    session = Session(spec_for(tmp_path, "5:8"), profiler=NpuProfiler())
    with pytest.warns(WindowWarning, match="never reached"):
        drive(session, 4)
    assert session.artifacts == []
    assert folders(tmp_path) == []  # torch_npu deleted the warm-up folder
    assert torch_npu_standin.called("profile")  # it was opened (in step 4, the warm-up step)


def test_loop_ending_before_the_window_never_opens_torch_npu(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    session = Session(spec_for(tmp_path, "50:60"), profiler=NpuProfiler())
    with pytest.warns(WindowWarning, match="never reached"):
        drive(session, 10)
    assert torch_npu_standin.called("profile") == []


def test_rank_not_selected_never_imports_torch_npu(tmp_path: Path, no_torch_npu: None) -> None:
    session = Session(spec_for(tmp_path, "1:3", ranks=[1]), profiler=NpuProfiler(), rank=0)
    drive(session, 5)
    assert session.artifacts == []


def test_two_windows_in_one_process_get_their_own_folders(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    first = run(spec_for(tmp_path, "1:3"), 4).artifacts
    second = run(spec_for(tmp_path, "1:3"), 4).artifacts
    assert len(first) == len(second) == 1
    assert first[0].path != second[0].path
    assert recorded_steps(second[0].path) == [1, 2]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(0, 6), length=st.one_of(st.none(), st.integers(1, 6)), ran=st.integers(0, 14))
def test_recorded_steps_match_the_window_for_any_loop(
    torch_npu_standin: StandIn, tmp_path_factory: pytest.TempPathFactory, start: int, length: int | None, ran: int
) -> None:
    out = tmp_path_factory.mktemp("w")
    window = Window(start, None if length is None else start + length)
    session = run(ProfileSpec(window=window, output_dir=out), ran)
    expected = window.clip(ran)
    if expected is None:
        assert session.artifacts == []
        assert folders(out) == []
        return
    (art,) = session.artifacts
    assert art.steps == expected
    steps = recorded_steps(art.path)
    # Exactly the steps that ran, plus the empty marker of step `ran` when the loop ended early.
    early = window.end is None or ran < window.end
    assert steps == list(range(expected.start, expected.end + (1 if early else 0)))


# -- torch_npu failing quietly ------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::profwin.errors.WindowWarning")  # core: "never reached" when nothing was written
def test_no_folder_is_a_clear_error(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    torch_npu_standin.fail_in = "start"  # torch_npu prints "[ERROR] Call start failed" and goes on
    session = Session(spec_for(tmp_path, "1:3"), profiler=NpuProfiler())
    with pytest.raises(PluginError, match=r"torch_npu wrote no profwin_rank0_w1-3_\d+_\*_ascend_pt folder"):
        drive(session, 4)
    assert any("[ERROR]" in line and "Call start failed" in line for line in torch_npu_standin.printed)


@pytest.mark.filterwarnings("ignore::profwin.errors.WindowWarning")  # core: "never reached" when nothing was written
def test_msprof_env_warns_instead(torch_npu_standin: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILING_MODE", "dynamic")
    session = Session(spec_for(tmp_path, "1:3"), profiler=NpuProfiler())
    with pytest.warns(UserWarning, match="PROFILING_MODE is set") as caught:
        drive(session, 4)
    assert session.artifacts == []
    assert any("no *_ascend_pt folder for steps 1:3" in str(w.message) for w in caught)


def test_analysis_that_fails_is_reported(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    torch_npu_standin.parse_works = False
    with pytest.warns(UserWarning, match="has no ASCEND_PROFILER_OUTPUT"):
        session = run(spec_for(tmp_path, "1:3", options={"npu": {"analysis": True}}), 4)
    assert len(session.artifacts) == 1  # the raw folder is still there to parse later


def test_analysis_on_parses_at_close(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    (art,) = run(spec_for(tmp_path, "2:4", options={"npu": {"analysis": True}}), 6).artifacts
    trace = json.loads((art.path / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    assert [e["name"] for e in trace["traceEvents"]] == ["ProfilerStep#2", "ProfilerStep#3"]


# -- activities -----------------------------------------------------------------------------------


@pytest.mark.parametrize("activity", ["cuda", "xpu"])
def test_other_accelerators_belong_to_the_torch_profiler(torch_npu_standin: StandIn, tmp_path: Path, activity: str) -> None:
    with pytest.raises(ConfigError, match="recorded by the 'torch' profiler") as err:
        NpuProfiler().check(spec_for(tmp_path, "1:2", activities=["cpu", activity]))
    assert err.value.path == "activities[1]"


def test_npu_unavailable(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    torch_npu_standin.npu_available = False
    assert NpuProfiler().check(spec_for(tmp_path, "1:2")).activities == ("cpu",)
    with pytest.raises(ConfigError, match=r"torch_npu\.npu\.is_available\(\) is False"):
        NpuProfiler().check(spec_for(tmp_path, "1:2", activities=["npu"]))
    with pytest.warns(UserWarning, match="dropping activity 'npu'"):
        kept = NpuProfiler().check(spec_for(tmp_path, "1:2", activities=["cpu", "npu"], on_unavailable="drop"))
    assert kept.activities == ("cpu",)


def test_bad_options_fail_before_anything_runs(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    session = Session(spec_for(tmp_path, "1:2", options={"npu": {"level": "level7"}}), profiler=NpuProfiler())
    with pytest.raises(ConfigError, match=r"options\.npu\.level"):
        session.start()
    assert torch_npu_standin.calls == []


def test_loaded_through_the_entry_point(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    info = {p.name: p for p in profwin.plugins(profwin.plugin.PROFILERS_GROUP)}["npu"]
    assert info.status == "ok"  # the stand-in is importable, so the plugin is usable
    session = Session(spec_for(tmp_path, "1:3"), profiler="npu")
    drive(session, 3)
    assert [a.steps for a in session.artifacts] == [Window(1, 3)]


# -- offline parsing ------------------------------------------------------------------------------


def test_analyse_parses_every_folder(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    run(spec_for(tmp_path, "1:3"), 4)
    run(spec_for(tmp_path, "2:3"), 4)
    parsed = analyse(tmp_path, export_type="db", processes=1)
    assert parsed == folders(tmp_path)
    assert len(parsed) == 2
    assert all((p / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").is_file() for p in parsed)
    (call,) = torch_npu_standin.called("analyse")
    assert (call["profiler_path"], call["export_type"], call["max_process_number"]) == (str(tmp_path), ["db"], 1)


def test_analyse_without_msprof_is_an_error(torch_npu_standin: StandIn, tmp_path: Path) -> None:
    run(spec_for(tmp_path, "1:3"), 4)
    torch_npu_standin.parse_works = False
    with pytest.raises(PluginError, match="needs CANN's msprof"):
        analyse(folders(tmp_path)[0])


def test_analyse_checks_its_arguments(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no \\*_ascend_pt folder"):
        analyse(tmp_path)
    (tmp_path / "x_1_2_ascend_pt").mkdir()
    with pytest.raises(ConfigError, match="must be one of"):
        analyse(tmp_path, export_type="csv")
    with pytest.raises(ConfigError, match="positive int"):
        analyse(tmp_path, processes=0)


# -- a long window in parts (profwin.parts) -------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "steps", "parts", "names"),
    [
        ("2:12", 14, [(2, 6), (6, 10), (10, 12)], ["w2-12_part0001_s2-6", "w2-12_part0002_s6-10", "w2-12_part0003_s10-12"]),
        ("0:", 9, [(0, 4), (4, 8), (8, 9)], ["w0-end_part0001_s0-4", "w0-end_part0002_s4-8", "w0-end_part0003_s8-12"]),
    ],
)
def test_a_long_window_is_written_in_parts_each_step_once(
    torch_npu_standin: StandIn, tmp_path: Path, window: str, steps: int, parts: list[tuple[int, int]], names: list[str]
) -> None:
    session = run(spec_for(tmp_path, window, part_steps=4), steps)
    assert [a.steps for a in session.artifacts] == [Window(a, b) for a, b in parts]
    held = [recorded_steps(a.path) for a in session.artifacts]
    if window.endswith(":"):  # the loop ended inside the last part: its next step's empty marker, as without parts
        assert held[-1][-1] == steps
        held[-1] = held[-1][:-1]
    assert held == [list(range(a, b)) for a, b in parts]
    assert [a.path.name.split(f"_{os.getpid()}_")[0] for a in session.artifacts] == [f"profwin_rank0_{n}" for n in names]
    # Parts after the first start recording at once: no warm-up step.
    warmups = [c["warmup"] for c in torch_npu_standin.called("schedule")]
    assert warmups == [1 if parts[0][0] else 0] + [0] * (len(parts) - 1)
