"""Shared helpers for profwin-traces tests."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


@pytest.fixture
def install_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """``install_backend(name, source)``: a distribution ``name`` 0.1 whose ``profwin.backends``
    entry point ``name`` is ``PLUGIN`` in the module ``{name}_plugin`` (``source``), installed the
    way pip would leave it (a dist-info folder beside the module on sys.path), without touching
    core. Discovery forgets it again afterwards."""
    from profwin.discovery import step_markers

    modules: list[str] = []

    def install(name: str, source: str) -> None:
        site = tmp_path / "site"
        dist = site / f"{name}-0.1.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(f"[profwin.backends]\n{name} = {name}_plugin:PLUGIN\n")
        (site / f"{name}_plugin.py").write_text(source)
        modules.append(f"{name}_plugin")
        monkeypatch.syspath_prepend(str(site))
        monkeypatch.setattr("profwin.discovery._loaded", {})
        step_markers.cache_clear()

    yield install
    monkeypatch.undo()
    for module in modules:
        sys.modules.pop(module, None)
    step_markers.cache_clear()


HOLD = """
import os
import select


def hold():
    # Until the test closes its end of the FIFO, in short waits, never one blocking read: a signal
    # the kernel hands another thread of this process only sets a flag that the main thread acts
    # on at its next bytecode, so a read blocked in the main thread would not see it. (A loaded
    # run's child sat 120 s on a SIGINT in the blocking read; that this was the cause is likely,
    # not proven.)
    with open(os.environ["PROFWIN_TEST_HOLD"], "rb", buffering=0) as fifo:
        while not select.select([fifo], [], [], 0.05)[0] or fifo.read(1):
            pass
"""


class HeldChild:
    """``python -m profwin ...`` in a child that ``patch`` (a ``sitecustomize`` calling ``hold()``)
    holds mid-work on a FIFO the test controls: a signal sent once :meth:`wait_held` returns lands
    at that point, never on a bet about how fast the child runs."""

    def __init__(self, tmp_path: Path, patch: str) -> None:
        site = tmp_path / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(HOLD + patch)
        self.fifo = tmp_path / "hold"
        os.mkfifo(self.fifo)
        self.env = dict(os.environ, PROFWIN_TEST_HOLD=str(self.fifo))
        self.env["PYTHONPATH"] = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "profwin", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env
        )

    def wait_held(self, proc: subprocess.Popen[str]) -> int:
        """The write end of the FIFO, once the child has opened its read end (it is then held and
        cannot finish); fails, with the child's output, if the child ends first. Closing it lets
        the child go on."""
        deadline = time.monotonic() + 300  # only for a child that never gets there: a failure, not a bet
        while True:
            try:
                return os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                    raise
            assert proc.poll() is None, f"the child ended before it was held: {proc.communicate()}"
            assert time.monotonic() < deadline, "the child never reached the hold"
            time.sleep(0.01)


@pytest.fixture
def held_child(tmp_path: Path) -> Callable[[str], HeldChild]:
    """``held_child(patch)``: a :class:`HeldChild` in this test's folder."""
    return lambda patch: HeldChild(tmp_path, patch)
