"""OpenRLHF's PPO entry point with profwin: the one line that enables it.

::

    python -m profwin_openrlhf.train_ppo_ray --profwin.rollouts 1 --profwin.spec 2:6 \\
        <everything you give python -m openrlhf.cli.train_ppo_ray>

takes profwin's two flags out of the command line (:func:`profwin_openrlhf.config.split_argv`),
puts profiling in place (:func:`profwin_openrlhf.enable`) and runs ``openrlhf.cli.train_ppo_ray``
as ``__main__`` with the rest, exactly as ``python -m openrlhf.cli.train_ppo_ray`` would. Without
profwin's flags it only runs OpenRLHF. A flag profwin cannot read is a one-line error (exit 2)
before anything starts; an OpenRLHF profwin does not support gets one warning and runs unprofiled.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

from profwin.plugin import ConfigError
from profwin_openrlhf.config import split_argv
from profwin_openrlhf.patch import enable

__all__ = ["OPENRLHF_MAIN", "main"]

OPENRLHF_MAIN = "openrlhf.cli.train_ppo_ray"
"""The module run as ``__main__``: OpenRLHF's own entry point."""


def main(argv: Sequence[str] | None = None) -> None:
    """Run OpenRLHF's PPO training with profiling (see the module doc)."""
    try:
        settings, rest = split_argv(sys.argv[1:] if argv is None else argv)
    except ConfigError as exc:
        print(f"profwin: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if settings is not None:
        enable(settings)
    sys.argv = [OPENRLHF_MAIN, *rest]
    runpy.run_module(OPENRLHF_MAIN, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
