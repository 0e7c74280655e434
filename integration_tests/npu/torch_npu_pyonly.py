"""Run profwin's npu driver against torch_npu's REAL Python profiler code, without an NPU.

Usage: python torch_npu_pyonly.py TORCH_NPU_SRC SCENARIOS_JSON RESULT_JSON

``TORCH_NPU_SRC`` holds torch_npu's unpacked .py files (fetch_torch_npu.sh). torch_npu's
``__init__`` (which loads the C extension and needs CANN) never runs: a bare ``torch_npu``
package points at those sources, and ``torch_npu._C*`` are served as inert STAND-INS (every
attribute a falsy callable; ``ProfilerActivity`` a real enum). What runs for real: torch_npu's
``profile``/``step``/``start``/``stop``, its schedule, its action controller, its path creator
(which makes the ``*_ascend_pt`` folder) and ``_ExperimentalConfig``'s argument checks. What
cannot run: collection, parsing, anything that talks to a device; three small shims replace the
device calls the control flow touches (listed in ``_shim``).

Each scenario's printed torch_npu messages, the ``ProfilerStep#`` markers torch_npu entered and
the artifacts profwin returned are written to RESULT_JSON for the test to check.
"""

from __future__ import annotations

import contextlib
import enum
import importlib.abc
import importlib.machinery
import io
import json
import os
import sys
import tempfile
import time
import types
import warnings
from pathlib import Path
from typing import Any


class _Inert:
    """Any attribute, call or iteration of a C-extension stand-in: falsy and harmless."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, item: str) -> Any:
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return _Inert(f"{self._name}.{item}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Inert(f"{self._name}()")

    def __bool__(self) -> bool:
        return False

    def __iter__(self) -> Any:
        return iter(())

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (object,)


class ProfilerActivity(enum.Enum):
    CPU = 0
    NPU = 1


class _InertModule(types.ModuleType):
    def __init__(self, name: str) -> None:
        super().__init__(name, "STAND-IN for torch_npu's C extension")
        self.__path__: list[str] = []

    def __getattr__(self, item: str) -> Any:
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return ProfilerActivity if item == "ProfilerActivity" else _Inert(f"{self.__name__}.{item}")


class _CExtension(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == "torch_npu._C" or fullname.startswith("torch_npu._C."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _InertModule(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _load(src: Path) -> Any:
    import torch  # noqa: F401  # torch_npu's modules expect it loaded

    package = types.ModuleType("torch_npu")
    package.__path__ = [str(src / "torch_npu")]
    package.__file__ = str(src / "torch_npu" / "__init__.py")
    package.__spec__ = importlib.machinery.ModuleSpec("torch_npu", None, is_package=True)
    sys.modules["torch_npu"] = package
    sys.meta_path.insert(0, _CExtension())
    import torch_npu.npu
    import torch_npu.profiler
    import torch_npu.version

    _shim(torch_npu)
    return torch_npu


def _shim(torch_npu: Any) -> None:
    """Replace the device calls torch_npu's control flow makes (nothing else)."""
    import torch
    import torch_npu.profiler.profiler as profiler_py
    import torch_npu.profiler.profiler_interface as interface

    activity = torch_npu.profiler.ProfilerActivity
    interface._supported_npu_activities = lambda: {activity.CPU, activity.NPU}  # a C call
    # Device clocks, written into profiler_info.json at finalize.
    interface._get_syscnt_enable = lambda: False
    interface._get_monotonic = time.monotonic_ns
    profiler_py.current_stream = lambda: None  # step markers become host-only mstx ranges
    torch.npu = types.SimpleNamespace(synchronize=lambda: None)  # stop_trace syncs the device
    torch_npu.npu.is_available = lambda: True
    torch_npu.__version__ = torch_npu.version.__version__


def _recording_markers() -> list[str]:
    """torch_npu enters ``torch.autograd.profiler.record_function("ProfilerStep#N")``: record N."""
    import torch.autograd.profiler as autograd_profiler

    entered: list[str] = []

    class Marker:
        def __init__(self, name: str) -> None:
            self.name = name

        def __enter__(self) -> Marker:
            entered.append(self.name)
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    autograd_profiler.record_function = Marker  # type: ignore[assignment,misc]
    return entered


def _session(scenario: dict[str, Any], markers: list[str]) -> dict[str, Any]:
    import profwin
    from profwin_npu import NpuProfiler

    out = Path(tempfile.mkdtemp(prefix="profwin-npu-pyonly-"))
    spec = profwin.ProfileSpec(
        window=profwin.Window.parse(scenario["window"]),
        output_dir=out,
        activities=scenario.get("activities"),
        options={"npu": scenario.get("options", {})},
        part_steps=scenario.get("part_steps", profwin.ProfileSpec().part_steps),
    )
    markers.clear()
    printed = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
        warnings.simplefilter("always")
        session = profwin.Session(spec, profiler=NpuProfiler())
        error = None
        try:
            with session:
                for _ in range(scenario["steps"]):
                    session.step()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
    return {
        "markers": list(markers),
        "artifacts": [
            {
                "name": a.path.name,
                "steps": str(a.steps),
                "kind": a.kind,
                "bytes": a.bytes,
                "files": sorted(str(f.relative_to(a.path)) for f in a.path.rglob("*") if f.is_file()),
            }
            for a in session.artifacts
        ],
        "folders_left": sorted(p.name for p in out.iterdir()),
        "printed": printed.getvalue().splitlines(),
        "warnings": [str(w.message) for w in caught],
        "error": error,
        "pid": os.getpid(),
    }


def _config(options: dict[str, Any], torch_npu: Any) -> dict[str, Any]:
    from profwin_npu import NpuOptions
    from profwin_npu.driver import experimental_kwargs

    printed = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
        warnings.simplefilter("always")
        kwargs = experimental_kwargs(torch_npu.profiler, NpuOptions.from_mapping(options))
        config = torch_npu.profiler._ExperimentalConfig(**kwargs)
    return {
        "options": options,
        "printed": printed.getvalue().splitlines(),
        "warnings": [str(w.message) for w in caught],
        "level": config._profiler_level,
        "aic_metrics": config._aic_metrics,
        "export_type": sorted(config.export_type),
        "tx": bool(config.tx_enabled),
    }


def main() -> None:
    src, scenarios_file, result_file = map(Path, sys.argv[1:4])
    torch_npu = _load(src)
    markers = _recording_markers()
    scenarios = json.loads(scenarios_file.read_text())
    results = {
        "sessions": [_session(s, markers) for s in scenarios["sessions"]],
        "configs": [_config(o, torch_npu) for o in scenarios["configs"]],
    }
    result_file.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
