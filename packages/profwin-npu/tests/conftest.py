"""Fixtures for profwin-npu's tests, including the torch_npu stand-in.

This machine has no Ascend NPU and no CANN toolkit, and torch_npu must not be installed here (it
breaks ``import torch``), so the driver is tested against :func:`make_torch_npu`, a STAND-IN for
``torch_npu``. It is not torch_npu: it models the Python control flow of torch_npu 2.13's
``torch_npu/profiler/{profiler,scheduler,_profiler_action_controller,_profiler_path_creator}.py``
(the schedule algorithm, the action map, the folder naming, the singleton path creator, errors
swallowed and printed, nothing done while the msprof env vars are set) and records every call
with its keyword arguments. What it writes into the ``*_ascend_pt`` folder is a record of the
step markers that were open while "recording", not real profiling data. Tests marked ``npu``
(test_npu_real.py) run the real thing on an Ascend machine.
"""

from __future__ import annotations

import enum
import functools
import importlib.machinery
import json
import os
import shutil
import socket
import sys
import types
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

_MSPROF_ENV = ("PROFILER_SAMPLECONFIG", "PROFILING_MODE")


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class ProfilerActivity(enum.Enum):
    CPU = 0
    NPU = 1


# Transitions after which torch_npu's action map does nothing.
_NO_OP_TRANSITIONS = {
    (ProfilerAction.NONE, ProfilerAction.NONE),
    (ProfilerAction.NONE, None),
    (ProfilerAction.WARMUP, ProfilerAction.WARMUP),
    (ProfilerAction.RECORD, ProfilerAction.RECORD),
    (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE),
}


class StandIn:
    """The state behind one stand-in ``torch_npu``: calls made, printed messages, switches."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.printed: list[str] = []
        self.npu_available = True
        self.parse_works = True  # False models a machine without CANN's msprof
        self.fail_in: str | None = None  # a method whose body raises, to test swallowed errors
        self.path_creator: dict[str, Any] = {"worker_name": None, "dir_name": None, "prof_path": None}
        self.modules: dict[str, types.ModuleType] = {}

    def called(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for call, kwargs in self.calls if call == name]

    def say(self, level: str, message: str) -> None:
        line = f"[{level}] [{os.getpid()}] profiler.py: {message}"
        self.printed.append(line)
        print(line, flush=True)


def _swallowing(state: StandIn) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """torch_npu's ``no_exception_func``: print the error and return None."""

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                if state.fail_in == func.__name__:
                    raise RuntimeError(f"stand-in failure in {func.__name__}")
                return func(*args, **kwargs)
            except Exception as exc:
                state.say("ERROR", f"Call {func.__name__} failed. Exception: {exc}")
                return None

        return wrapper

    return decorator


def make_torch_npu(state: StandIn) -> dict[str, types.ModuleType]:
    """Build the stand-in modules ``torch_npu``, ``torch_npu.npu``, ``torch_npu.profiler`` and
    ``torch_npu.profiler.profiler`` around ``state``."""
    swallow = _swallowing(state)

    class Schedule:
        # torch_npu's signature: positional order (wait, active, warmup).
        def __init__(
            self, wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0, skip_first_wait: int = 0
        ) -> None:
            state.calls.append(("schedule", dict(wait=wait, active=active, warmup=warmup, repeat=repeat, skip_first=skip_first)))
            self.wait, self.active, self.warmup, self.repeat, self.skip_first = wait, active, warmup, repeat, skip_first
            if warmup == 0:
                state.say("WARNING", "Profiler won't be using warmup, this can skew profiler results")

        def __call__(self, step: int) -> ProfilerAction:
            if step < self.skip_first:
                return ProfilerAction.NONE
            step -= self.skip_first
            num_steps = self.wait + self.warmup + self.active
            if self.repeat > 0 and step / num_steps >= self.repeat:
                return ProfilerAction.NONE
            mod_step = step % num_steps
            if mod_step < self.wait:
                return ProfilerAction.NONE
            if mod_step < self.wait + self.warmup:
                return ProfilerAction.WARMUP
            return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    class ProfilerLevel:
        Level0, Level1, Level2, Level_none = "Level0", "Level1", "Level2", "Level_none"

    class AiCMetrics:
        PipeUtilization = "ACL_AICORE_PIPE_UTILIZATION"
        ArithmeticUtilization = "ACL_AICORE_ARITHMETIC_UTILIZATION"
        Memory = "ACL_AICORE_MEMORY_BANDWIDTH"
        MemoryL0 = "ACL_AICORE_L0B_AND_WIDTH"
        MemoryUB = "ACL_AICORE_MEMORY_UB"
        ResourceConflictRatio = "ACL_AICORE_RESOURCE_CONFLICT_RATIO"
        L2Cache = "ACL_AICORE_L2_CACHE"
        MemoryAccess = "ACL_AICORE_MEMORY_ACCESS"
        AiCoreNone = "ACL_AICORE_NONE"

    class ExportType:
        Db, Text = "db", "text"

    class _ExperimentalConfig:
        # torch_npu 2.13's signature and defaults.
        def __init__(
            self,
            profiler_level: str = "Level0",
            aic_metrics: str = "ACL_AICORE_PIPE_UTILIZATION",
            l2_cache: bool = False,
            msprof_tx: bool = False,
            mstx: bool = False,
            data_simplification: bool = True,
            record_op_args: bool = False,
            op_attr: bool = False,
            gc_detect_threshold: float | None = None,
            export_type: str | list[str] = "text",
            host_sys: list[str] | None = None,
            mstx_domain_include: list[str] | None = None,
            mstx_domain_exclude: list[str] | None = None,
            sys_io: bool = False,
            sys_interconnection: bool = False,
        ) -> None:
            self.kwargs = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
            state.calls.append(("_ExperimentalConfig", dict(self.kwargs)))

    @swallow
    def tensorboard_trace_handler(
        dir_name: str | None = None, worker_name: str | None = None, analyse_flag: bool = True, async_mode: bool = False
    ) -> Callable[[Any], None]:
        state.calls.append(
            (
                "tensorboard_trace_handler",
                dict(dir_name=dir_name, worker_name=worker_name, analyse_flag=analyse_flag, async_mode=async_mode),
            )
        )
        # torch_npu keeps this in a process-wide singleton: the last handler created wins.
        state.path_creator.update(worker_name=worker_name, dir_name=dir_name)

        def handler_fn(prof: Any) -> None:
            if analyse_flag:
                _parse(Path(prof.prof_path))

        return handler_fn

    def _parse(folder: Path) -> None:
        if not state.parse_works:
            state.say("WARNING", "Profiling data parsing failed, error: 'msprof' command not found!")
            return
        steps = json.loads((folder / "FRAMEWORK" / "steps.json").read_text())
        out = folder / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(exist_ok=True)
        events = [{"name": f"ProfilerStep#{k}", "ph": "X"} for k in steps]
        (out / "trace_view.json").write_text(json.dumps({"traceEvents": events}))

    class profile:  # torch_npu's name
        def __init__(self, **kwargs: Any) -> None:
            allowed = {
                "activities", "schedule", "on_trace_ready", "record_shapes", "profile_memory", "with_stack",
                "with_flops", "with_modules", "experimental_config", "execution_trace_observer",
                "custom_trace_id_callback", "use_cuda",
            }  # fmt: skip
            unknown = set(kwargs) - allowed
            if unknown:
                raise TypeError(f"profile() got unexpected keyword arguments {sorted(unknown)}")
            state.calls.append(("profile", dict(kwargs)))
            self.env_valid = not any(os.environ.get(v) for v in _MSPROF_ENV)
            schedule = kwargs.get("schedule")
            self.schedule = schedule if schedule is not None else (lambda _: ProfilerAction.RECORD)
            self.record_steps = schedule is not None
            self.on_trace_ready = kwargs.get("on_trace_ready")
            self.step_num = 0
            self.current_action = self.schedule(self.step_num)
            self.stopped = False
            self.prof_path = ""
            self.tracing = False
            self.markers: list[int] = []  # steps whose marker was open while recording
            self._open_marker: int | None = None

        # -- the action controller's transitions --------------------------------------------
        def _init_trace(self) -> None:
            if not self.env_valid:
                return
            base = state.path_creator["dir_name"] or os.getcwd()
            worker = f"{state.path_creator['worker_name'] or socket.gethostname()}_{os.getpid()}"
            stamp = datetime.now().strftime("%Y%m%d%H%M%S%f")[:-3]
            self.prof_path = os.path.join(base, f"{worker}_{stamp}_ascend_pt")
            os.makedirs(self.prof_path)
            self.markers = []

        def _start_trace(self) -> None:
            if self.env_valid:
                self.tracing = True
                if self._open_marker is not None:
                    self.markers.append(self._open_marker)

        def _stop_trace(self) -> None:
            self.tracing = False

        def _finalize_trace(self) -> None:
            if not (self.env_valid and self.prof_path):  # never initialised (e.g. start() failed)
                return
            raw = Path(self.prof_path) / "FRAMEWORK"
            raw.mkdir()
            (raw / "steps.json").write_text(json.dumps(self.markers))
            (Path(self.prof_path) / "profiler_info.json").write_text(json.dumps({"config": "stand-in"}))

        def _trace_ready(self) -> None:
            if self.on_trace_ready and self.env_valid and self.prof_path:
                self.on_trace_ready(self)

        def _delete_prof_dir(self) -> None:
            if self.env_valid and self.prof_path:
                shutil.rmtree(self.prof_path)

        def _transit(self, prev: ProfilerAction, cur: ProfilerAction | None) -> None:
            state.calls.append(("transit", {"from": prev, "to": cur, "step": self.step_num}))
            a = ProfilerAction
            if prev is a.NONE and cur in (a.WARMUP, a.RECORD, a.RECORD_AND_SAVE):
                self._init_trace()
                if cur is not a.WARMUP:
                    self._start_trace()
            elif prev is a.WARMUP and cur in (a.RECORD, a.RECORD_AND_SAVE):
                self._start_trace()
            elif prev is a.WARMUP and cur is None:
                state.say("WARNING", "Incorrect schedule: Stop profiler while current state is WARMUP")
                self._finalize_trace()
                self._delete_prof_dir()
            elif prev is a.RECORD and cur is None:
                state.say("WARNING", "Incorrect schedule: Stop profiler while current state is RECORD")
                self._stop_trace()
                self._finalize_trace()
                self._trace_ready()
            elif prev is a.RECORD_AND_SAVE and cur in (a.NONE, None):
                if cur is None:
                    state.say("WARNING", "Stop profiler while current state is RECORD_AND_SAVE")
                self._stop_trace()
                self._finalize_trace()
                self._trace_ready()
            elif (prev, cur) not in _NO_OP_TRANSITIONS:
                raise AssertionError(f"the stand-in does not model {prev} -> {cur}")

        def _enter_marker(self) -> None:
            if self.record_steps:
                self._open_marker = self.step_num
                if self.tracing:
                    self.markers.append(self.step_num)

        def _exit_marker(self) -> None:
            self._open_marker = None

        @swallow
        def start(self) -> None:
            state.calls.append(("start", {"step_num": self.step_num}))
            self.stopped = False
            self._transit(ProfilerAction.NONE, self.current_action)
            self._enter_marker()

        @swallow
        def step(self) -> None:
            state.calls.append(("step", {"step_num": self.step_num}))
            if self.stopped:
                state.say("WARNING", "Profiler is stopped, step takes no effect!")
                return
            self._exit_marker()
            prev = self.current_action
            self.step_num += 1
            self.current_action = self.schedule(self.step_num)
            self._transit(prev, self.current_action)
            self._enter_marker()

        @swallow
        def stop(self) -> None:
            state.calls.append(("stop", {"step_num": self.step_num}))
            self._exit_marker()
            self._transit(self.current_action, None)
            self.stopped = True

    @swallow
    def analyse(profiler_path: str, max_process_number: int = 1, export_type: Any = None) -> None:
        state.calls.append(
            ("analyse", dict(profiler_path=profiler_path, max_process_number=max_process_number, export_type=export_type))
        )
        root = Path(profiler_path)
        folders = [root] if root.name.endswith("_ascend_pt") else sorted(root.glob("*_ascend_pt"))
        for folder in folders:
            _parse(folder)

    def package(name: str) -> types.ModuleType:
        module = types.ModuleType(name, "STAND-IN for torch_npu (see tests/conftest.py); not the real package")
        module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        module.__path__ = []
        return module

    torch_npu, npu, profiler, profiler_py = (
        package(n) for n in ("torch_npu", "torch_npu.npu", "torch_npu.profiler", "torch_npu.profiler.profiler")
    )
    npu.is_available = lambda: state.npu_available  # type: ignore[attr-defined]
    for name, value in {
        "ProfilerActivity": ProfilerActivity,
        "ProfilerAction": ProfilerAction,
        "schedule": Schedule,
        "ProfilerLevel": ProfilerLevel,
        "AiCMetrics": AiCMetrics,
        "ExportType": ExportType,
        "_ExperimentalConfig": _ExperimentalConfig,
        "tensorboard_trace_handler": tensorboard_trace_handler,
        "profile": profile,
        "profiler": profiler_py,
    }.items():
        setattr(profiler, name, value)
    profiler_py.analyse = analyse  # type: ignore[attr-defined]
    torch_npu.npu, torch_npu.profiler = npu, profiler  # type: ignore[attr-defined]
    return {m.__name__: m for m in (torch_npu, npu, profiler, profiler_py)}


@pytest.fixture
def torch_npu_standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    """Install the torch_npu stand-in in ``sys.modules`` for one test; yields its state."""
    for var in _MSPROF_ENV:
        monkeypatch.delenv(var, raising=False)
    state = StandIn()
    state.modules = make_torch_npu(state)
    for name, module in state.modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return state


@pytest.fixture
def no_torch_npu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make sure ``import torch_npu`` fails the way it does where it is not installed."""
    monkeypatch.setitem(sys.modules, "torch_npu", None)
