"""``profwin collect``: profwin-ray's command, joined to ``profwin`` through the ``profwin.commands``
entry point. Listing plugins imports this module, so it imports nothing at its top but the
contract: the command line's pieces when a parser is built, ray when the command runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import Command

if TYPE_CHECKING:
    import argparse

__all__ = ["COLLECT"]

_INTERRUPTED = 130
"""profwin's exit code for a command stopped by Ctrl-C (docs/cli.md); what arrived is kept and said."""


def _arguments(p: argparse.ArgumentParser) -> None:
    from profwin.plugin.cli import cluster_option, int_arg

    cluster_option(p, "the Ray cluster to collect from", required=True)
    p.add_argument("--from", dest="source", required=True, metavar="PATTERN", help="path or glob on the nodes (** for any depth)")
    p.add_argument("--to", required=True, metavar="DIR", help="folder on this machine; files land in DIR/<node>/<file>")
    p.add_argument(
        "--chunk-bytes", type=int_arg(1024), default=1 << 22, metavar="N",
        help="bytes per transfer (memory is bounded by this, not the file size; default 4 MiB)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the per-node results as JSON")


def _collect(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from profwin.plugin import ClusterReport, CollectInterrupted
    from profwin.plugin.cli import print_json
    from profwin_ray import collect

    report: ClusterReport
    try:
        report = collect(
            args.source,
            Path(args.to),
            address=args.ray,
            chunk_bytes=args.chunk_bytes,
            progress=sys.stderr.isatty() and not args.json,
        )
        code = 0 if report.ok else 1
    except CollectInterrupted as stopped:  # what arrived is kept: say what it is
        report, code = stopped.report, _INTERRUPTED
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.render())
    return code


# Not all-or-nothing: what arrived is kept, each file whole (a collection stopped says what it holds).
COLLECT = Command(
    help="copy a session's files from every Ray node into one folder (needs profwin[ray])", arguments=_arguments, run=_collect
)
