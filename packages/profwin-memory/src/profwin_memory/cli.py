"""``profwin-memory summarize FILE... [--trust] [--json]`` (also ``python -m profwin_memory``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from profwin.plugin.cli import CliParser, print_json, run_cli
from profwin_memory.provenance import UntrustedSnapshotError
from profwin_memory.reader import summarize
from profwin_memory.timeline import TimelineError

__all__ = ["main"]


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.2f} MiB"


def _render(summary: dict[str, Any]) -> str:
    lines = [summary["path"]]
    if summary["kind"] == "memory-timeline":
        totals = summary["totals"]
        lines.append(
            f"  CPU timeline, steps {summary['steps']}: allocated {_mib(totals['alloc_bytes'])} in "
            f"{totals['alloc_count']} blocks, freed {_mib(totals['free_bytes'])}; peak live "
            f"{_mib(totals['peak_live_bytes'])} at step {totals['peak_step']}, {_mib(totals['end_live_bytes'])} at the end; "
            f"{summary['events']:,} events"
        )
        lines.extend(f"    {op['alloc_bytes']:>14,d} B  {op['alloc_count']:>7,d}x  {op['op']}" for op in summary["top_ops"])
        return "\n".join(lines)
    lines.append(
        f"  CUDA snapshot: {summary['segments']} segments, reserved {_mib(summary['reserved_bytes'])}, "
        f"allocated {_mib(summary['allocated_bytes'])} at dump time"
    )
    for dev in summary["devices"]:
        lines.append(
            f"  device {dev['device']}: {dev['events']} events {dev['actions']}; allocated {_mib(dev['alloc_bytes'])}, "
            f"peak growth {_mib(dev['peak_growth_bytes'])}, end growth {_mib(dev['end_growth_bytes'])}"
        )
        lines.extend(f"    {s['alloc_bytes']:>14,d} B  {s['alloc_count']:>7,d}x  {s['site']}" for s in dev["top_sites"])
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``profwin-memory``; errors are one line and a documented exit code (see :mod:`profwin.cli_runner`)."""
    return run_cli(_main, argv, prog="profwin-memory")


def _main(argv: Sequence[str] | None) -> int:
    parser = CliParser(prog="profwin-memory", description="read what the profwin memory profiler wrote")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("summarize", help="peak, per-step and top allocators of snapshots and timelines")
    p.add_argument("files", nargs="+", metavar="FILE", help="*.memory_snapshot.pickle or *.memory_timeline.json[.gz]")
    p.add_argument(
        "--trust",
        action="store_true",
        help="read snapshots that profwin on this machine did not sign (unpickling runs code chosen by their author)",
    )
    p.add_argument(
        "--json", action="store_true", help="print one JSON document: the file's object, or a list of them for several files"
    )
    args = parser.parse_args(argv)
    status = 0
    documents: list[dict[str, Any]] = []  # --json: one document on stdout, whatever happens per file
    for path in args.files:
        try:
            summary = summarize(path, trust=args.trust)
        except UntrustedSnapshotError as exc:
            error = f"refusing {path}: {exc}"
        except FileNotFoundError:
            error = f"cannot read {path}: no such file"
        except TimelineError as exc:  # its reason names the place in the file
            error = f"cannot read {path}: {' '.join(exc.reason.split())}"
        except (OSError, ValueError) as exc:
            error = f"cannot read {path}: {' '.join(str(exc).split())}"
        else:
            if args.json:
                documents.append(summary)
            else:
                print(_render(summary))
            continue
        status = 1
        if args.json:  # failures are entries of the document too
            documents.append({"error": error, "path": str(path)})
        else:
            print(f"profwin-memory: {error}", file=sys.stderr)
    if args.json:
        print_json(documents[0] if len(documents) == 1 else documents, indent=None)
    return status
