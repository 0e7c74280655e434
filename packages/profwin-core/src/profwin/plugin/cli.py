"""A plugin's command line: its own (``python -m profwin_memory ...``) or a command it adds to
``profwin`` (a :class:`~profwin.plugin.Command`, as profwin-traces' ``summarize``).

:func:`run_cli` runs a main function with one-line errors and documented exit codes;
:class:`CliParser` is argparse whose errors :func:`run_cli` reports; :func:`print_json` writes a
command's JSON answer. The arguments' types: :func:`int_arg`, :func:`step_arg`,
:func:`window_arg`, :func:`cluster_option` (``--ray [ADDRESS]``); a command that wrote traces ends
with :func:`how_to_view`. Imported only by a plugin's command-line modules (argparse, signal
handling), so loading an entry point stays cheap.
"""

from profwin.cli_runner import CliParser as CliParser
from profwin.cli_runner import cluster_option as cluster_option
from profwin.cli_runner import how_to_view as how_to_view
from profwin.cli_runner import int_arg as int_arg
from profwin.cli_runner import print_json as print_json
from profwin.cli_runner import run_cli as run_cli
from profwin.cli_runner import step_arg as step_arg
from profwin.cli_runner import window_arg as window_arg

# The names above are the surface: listed once, as its imports.
__all__ = sorted(name for name in dir() if not name.startswith("_"))
