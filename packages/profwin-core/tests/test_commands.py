"""Commands other distributions add to ``profwin`` (the ``profwin.commands`` entry points): listed
in ``--help``, run like core's own, and, when the distribution is missing or broken, one line that
says what to do (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from profwin.cli import build_parser, main
from profwin.discovery import commands, plugins

_COMMAND = """
from profwin.plugin import Command

def _arguments(p):
    p.add_argument("name")
    p.add_argument("--json", action="store_true")

def _run(args):
    print(f"hello {args.name}")
    return 3

HELLO = Command(help="say hello", arguments=_arguments, run=_run)
PLUGINS = Command(help="a second 'plugins'", arguments=_arguments, run=_run)
"""


@pytest.fixture
def install_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """``install_commands(source, entry_points)``: a distribution ``profwin-hello`` whose module
    ``hello_commands`` is ``source`` and whose ``profwin.commands`` entry points are the lines
    ``entry_points``, installed as pip leaves one (a dist-info beside the module on sys.path)."""

    def install(source: str, entry_points: str) -> None:
        site = tmp_path / "site"
        info = site / "profwin_hello-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: profwin-hello\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[profwin.commands]\n{entry_points}\n")
        (site / "hello_commands.py").write_text(source)
        monkeypatch.syspath_prepend(str(site))

    yield install
    sys.modules.pop("hello_commands", None)


@pytest.fixture
def without_trace_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """As where profwin-traces is not installed: no command of its is found."""
    monkeypatch.setattr("profwin.cli.commands", lambda: {})


def test_a_distributions_command_is_listed_and_runs(
    install_commands: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    install_commands(_COMMAND, "hello = hello_commands:HELLO")
    assert "hello" in build_parser().format_help()
    assert main(["hello", "world"]) == 3
    assert capsys.readouterr().out == "hello world\n"
    (info,) = [p for p in plugins("profwin.commands") if p.name == "hello"]
    assert (info.distribution, info.status, info.to_dict()["summary"]) == ("profwin-hello", "ok", "say hello")


def test_a_command_never_replaces_one_of_cores(
    install_commands: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    install_commands(_COMMAND, "plugins = hello_commands:PLUGINS")
    assert main(["plugins", "--json"]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)


def test_a_broken_command_says_why_and_hides_no_other(
    install_commands: Callable[[str, str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    install_commands(_COMMAND + "\nBROKEN = 42\n", "hello = hello_commands:HELLO\nbroken = hello_commands:BROKEN")
    assert main(["broken", "x", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error == ("'profwin broken' of profwin-hello 0.1 cannot run: hello_commands:BROKEN is a int, not a profwin Command")
    assert main(["hello", "x"]) == 3
    assert isinstance(commands()["broken"], Exception)


@pytest.mark.usefixtures("without_trace_commands")
@pytest.mark.parametrize("command", ["summarize", "diff", "trim", "merge"])
def test_without_profwin_traces_the_user_is_told_what_to_install(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "trace.json", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == (
        f"'profwin {command}' comes with profwin-traces, which is not installed: "
        'pip install --find-links dist/ "profwin-traces" (the umbrella "profwin" includes it; dist/: bash scripts/build_dists.sh dist/)'
    )
    assert main([command, "trace.json"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"profwin: error: 'profwin {command}' comes with profwin-traces, which is not installed: "
        'pip install --find-links dist/ "profwin-traces" (the umbrella "profwin" includes it; dist/: bash scripts/build_dists.sh dist/)'
    ]


def test_listing_the_commands_imports_none_of_their_work() -> None:
    """Building the command line loads each command's module, which imports nothing heavy."""
    probe = (
        "import sys\nfrom profwin.cli import build_parser\nbuild_parser()\n"
        "print(' '.join(m for m in sys.modules if m.startswith(('profwin_traces.', 'profwin.traces.'))"
        " and not m.endswith('.commands')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == []
