"""OpenRLHF's PPO entry point with profwin: the one line that enables it.

::

    python -m profwin_openrlhf.train_ppo_ray --profwin.rollouts 1 --profwin.spec 2:6 \\
        <everything you give python -m openrlhf.cli.train_ppo_ray>

takes profwin's two flags out of the command line (:func:`profwin_openrlhf.settings.split_argv`),
puts profiling in place (:func:`profwin_openrlhf.enable`) and runs ``openrlhf.cli.train_ppo_ray``
as ``__main__`` with the rest, exactly as ``python -m openrlhf.cli.train_ppo_ray`` would. Without
profwin's flags it only runs OpenRLHF. A flag profwin cannot read is a one-line error (exit 2)
before anything starts; an OpenRLHF profwin does not support gets one warning and runs unprofiled.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from collections.abc import Sequence

from profwin.plugin import PluginError
from profwin.plugin.cli import run_cli
from profwin_openrlhf._plugin import PLUGIN
from profwin_openrlhf.seam import enable
from profwin_openrlhf.settings import OpenRLHFProfiling, split_argv

__all__ = ["OPENRLHF_MAIN", "PROG", "main"]

OPENRLHF_MAIN = "openrlhf.cli.train_ppo_ray"
"""The module run as ``__main__``: OpenRLHF's own entry point."""
PROG = "profwin-openrlhf"
"""What the launcher's one-line errors and warnings start with."""


def main(argv: Sequence[str] | None = None) -> None:
    """Run OpenRLHF's PPO training with profiling (see the module doc). What profwin checks first
    (its flags, that OpenRLHF is there) runs through core's command runner: an error is one line
    and exit 2, never a traceback; then profiling is put in place (:func:`enable`, which warns
    and leaves OpenRLHF alone when it cannot) and OpenRLHF runs as itself."""
    found: list[OpenRLHFProfiling | None] = []
    rest: list[str] = []
    code = run_cli(lambda args: _check(args or [], found, rest), list(sys.argv[1:] if argv is None else argv), prog=PROG)
    if code:
        raise SystemExit(code)
    if found[0] is not None:
        enable(found[0])
    sys.argv = [OPENRLHF_MAIN, *rest]
    runpy.run_module(OPENRLHF_MAIN, run_name="__main__", alter_sys=True)


def _check(argv: Sequence[str], found: list[OpenRLHFProfiling | None], rest: list[str]) -> int:
    settings, left = split_argv(argv)
    if importlib.util.find_spec(OPENRLHF_MAIN.split(".")[0]) is None:
        raise PluginError(
            f"OpenRLHF is not installed in this environment, and {PROG} runs its {OPENRLHF_MAIN}: "
            f"pip install '{PLUGIN.requires[0]}'"
        )
    found.append(settings)
    rest.extend(left)
    return 0


if __name__ == "__main__":
    main()
