"""The two public surfaces and the one error family.

``profwin`` is the users' surface (at most 32 names, each documented), ``profwin.plugin`` the
plugin authors'; every exception profwin raises on purpose derives from ``ProfwinError``, and the
command lines print any of them as one line.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import profwin
import profwin.plugin
import profwin.plugin.cli
from profwin.cli_runner import EXIT_ERROR, run_cli

ROOT = Path(__file__).resolve().parents[3]
DISTRIBUTIONS = (
    "profwin",
    "profwin_traces",
    "profwin_vllm",
    "profwin_sglang",
    "profwin_npu",
    "profwin_memory",
    "profwin_verl",
    "profwin_slime",
)
# Modules whose import does something (runs a command, patches verl): they define no errors.
_SIDE_EFFECTS = ("__main__", ".autopatch")


def _exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in profwin's own modules (all distributions), by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for top in DISTRIBUTIONS:
        if importlib.util.find_spec(top) is None:
            continue  # this package's own CI job installs it alone
        package = importlib.import_module(top)
        walked = list(pkgutil.walk_packages(package.__path__, prefix=f"{top}.", onerror=lambda name: None))
        for name in [top, *(m.name for m in walked)]:
            if name.endswith(_SIDE_EFFECTS):
                continue
            module = importlib.import_module(name)
            for obj in vars(module).values():
                if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == name:
                    found[f"{name}.{obj.__qualname__}"] = obj
    return found


def test_one_error_family() -> None:
    found = _exceptions()
    assert "profwin.engine.TargetError" in found
    if importlib.util.find_spec("profwin_traces") is not None:  # not in core's own CI job
        assert "profwin_traces.reader.TraceError" in found
    # Warnings are not errors, and SIGTERM's Terminated and Ctrl-C's CollectInterrupted (a
    # KeyboardInterrupt carrying what arrived) must get past `except Exception`.
    passing = ("profwin.errors.Terminated", "profwin.protocols.CollectInterrupted")
    errors = {n: c for n, c in found.items() if not issubclass(c, Warning) and n not in passing}
    outside = sorted(n for n, c in errors.items() if not issubclass(c, profwin.ProfwinError))
    assert outside == []
    assert len(errors) >= 9  # ProfwinError, Config, ProfilingDisabled, Plugin, Target, EngineBusy, Session, Trace, memory's


@pytest.mark.parametrize(
    "error",
    [
        profwin.TargetError("the server at http://127.0.0.1:1 refused the connection"),
        profwin.SessionError("stop failed on 1 of 2 engines"),
        profwin.PluginError("backend 'toy' failed while planning: ValueError: no"),
        profwin.ProfilingDisabled("verl profiles nothing with this config: enable is false", path="profiler"),
    ],
)
def test_the_cli_prints_any_profwin_error_as_one_line(error: profwin.ProfwinError, capsys: pytest.CaptureFixture[str]) -> None:
    def main(argv: object) -> int:
        raise error

    assert run_cli(main, [], prog="profwin") == EXIT_ERROR
    err = capsys.readouterr().err
    assert err == f"profwin: error: {' '.join(str(error).split())}\n"
    assert "internal error" not in err


def test_user_surface_is_small_and_documented() -> None:
    assert len(profwin.__all__) <= 32
    table = (ROOT / "docs" / "api.md").read_text().split("## profwin (profwin-core)")[1].split(":::")[0]
    listed = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert listed == set(profwin.__all__)
    no_docstring = [
        n for n in profwin.__all__ if callable(getattr(profwin, n)) and not (getattr(profwin, n).__doc__ or "").strip()
    ]
    assert no_docstring == []


def test_plugin_author_names_left_the_user_surface() -> None:
    for name in ("PluginSpec", "Driver", "Profiler", "fan_out", "BACKENDS_GROUP", "StepMarker"):
        assert name not in profwin.__all__
        assert name in profwin.plugin.__all__
    assert "run_cli" not in profwin.__all__
    assert "run_cli" in profwin.plugin.cli.__all__


@pytest.mark.parametrize(
    ("surface", "name"),
    [
        ("profwin", "PluginSpec"),
        ("profwin", "run_cli"),
        ("profwin", "MAX_STEP"),
        ("profwin", "load_verl"),
        ("profwin.plugin", "Ranks"),
    ],
)
def test_names_that_moved_before_the_first_release_are_not_forwarded(surface: str, name: str) -> None:
    """Nothing was released under these names (every distribution is 0.1.0): no shim keeps them."""
    with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
        getattr(importlib.import_module(surface), name)


@pytest.mark.parametrize("module", ["profwin.verl", "profwin.verl.autopatch", "profwin.cli_support"])
def test_module_paths_that_moved_before_the_first_release_are_gone(module: str) -> None:
    """verl's integration is ``profwin_verl`` (``VERL_USE_EXTERNAL_MODULES=profwin_verl.autopatch``),
    the command-line runner ``profwin.cli_runner``; core imports no distribution above it."""
    assert importlib.util.find_spec(module.split(".")[0]) is not None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


@pytest.mark.parametrize("module", ["profwin.traces", "profwin.plugin.Ranks"])
def test_the_trace_toolkit_left_core(module: str) -> None:
    """The trace tools are profwin-traces' (``profwin_traces``); ``profwin.plugin.Ranks`` is
    ``RankSelection``, and ``profwin_traces.Ranks`` a multi-rank summary."""
    if module == "profwin.plugin.Ranks":
        assert not hasattr(profwin.plugin, "Ranks")
        return
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(module)


def test_importing_the_facades_imports_no_command_line() -> None:
    code = "import sys, profwin, profwin.plugin; print(sorted(m for m in ('argparse', 'profwin.cli_runner', 'profwin.cli') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from profwin.plugin.cli import run_cli as lazy

    assert lazy is run_cli
