"""Deprecated name of :mod:`profwin.cli_runner` (renamed during profwin-core 0.1's development, before any release; removed in 0.2).

Plugins take :func:`run_cli` from :mod:`profwin.plugin`; the exit codes live in
:mod:`profwin.cli_runner`.
"""

from __future__ import annotations

import warnings

from profwin.cli_runner import (
    EXIT_BROKEN_PIPE,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    int_arg,
    run_cli,
    seconds_arg,
)

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "int_arg", "run_cli", "seconds_arg"]

warnings.warn(
    "profwin.cli_support is now profwin.cli_runner (plugins: run_cli from profwin.plugin); the old name goes away in profwin-core 0.2",
    DeprecationWarning,
    stacklevel=2,
)
