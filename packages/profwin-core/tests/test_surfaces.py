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
# Modules whose import does something (runs a command, patches verl, warns): they define no errors;
# profwin.verl only forwards to profwin_verl, which is walked itself.
_SIDE_EFFECTS = ("__main__", ".autopatch", ".cli_support")


def _exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in profwin's own modules (all distributions), by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for top in DISTRIBUTIONS:
        if importlib.util.find_spec(top) is None:
            continue  # this package's own CI job installs it alone
        package = importlib.import_module(top)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # walking imports the forwarding profwin.verl
            walked = list(pkgutil.walk_packages(package.__path__, prefix=f"{top}.", onerror=lambda name: None))
        for name in [top, *(m.name for m in walked)]:
            if name.endswith(_SIDE_EFFECTS) or name.startswith("profwin.verl"):
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
    for name in ("PluginSpec", "Driver", "Profiler", "fan_out", "run_cli", "BACKENDS_GROUP", "StepMarker"):
        assert name not in profwin.__all__
        assert name in profwin.plugin.__all__


@pytest.mark.parametrize(
    ("name", "home"), [("PluginSpec", "profwin.plugin"), ("run_cli", "profwin.plugin"), ("MAX_STEP", "profwin.window")]
)
def test_former_top_level_names_forward_with_a_deprecation(name: str, home: str) -> None:
    with pytest.warns(DeprecationWarning, match=rf"profwin\.{name} moved: import it from {home}"):
        obj = getattr(profwin, name)
    assert obj is getattr(importlib.import_module(home), name)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        profwin.no_such_name  # noqa: B018


def test_plugin_api_ranks_is_one_meaning() -> None:
    with pytest.warns(DeprecationWarning, match="RankSelection"):
        old = profwin.plugin.Ranks
    assert old is profwin.plugin.RankSelection


def test_importing_the_facades_imports_no_command_line() -> None:
    code = "import sys, profwin, profwin.plugin; print(sorted(m for m in ('argparse', 'profwin.cli_runner', 'profwin.cli') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from profwin.plugin import run_cli as lazy

    assert lazy is run_cli


def test_the_old_verl_path_says_what_to_install_without_profwin_verl() -> None:
    code = (
        "import sys; sys.modules['profwin_verl'] = None\n"
        "try:\n    import profwin.verl\nexcept ModuleNotFoundError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", code], capture_output=True, text=True, check=True
    )
    assert "pip install profwin-verl" in done.stdout
