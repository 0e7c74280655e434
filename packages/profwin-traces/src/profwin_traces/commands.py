"""The trace tools' commands: ``profwin summarize``, ``diff``, ``trim``, ``merge`` and ``timeline``.

Each is a :class:`~profwin.plugin.Command` under the ``profwin.commands`` entry-point group.
Listing plugins imports this module (``profwin plugins``, and the step markers every trace tool
looks up), so it imports nothing at its top but the contract: the command line's pieces are
imported when a parser is built, the tools when a command runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profwin.plugin import Command

if TYPE_CHECKING:
    import argparse

__all__ = ["DIFF", "MERGE", "SUMMARIZE", "TIMELINE", "TRIM"]

_FIRST_STEP_HELP = (
    "number of the trace's first step (vLLM/SGLang traces do not record it; default 0, or what a trimmed trace recorded)"
)


def _first_step_option(p: argparse.ArgumentParser) -> None:
    from profwin.plugin.cli import step_arg

    p.add_argument("--first-step", type=step_arg, metavar="N", help=_FIRST_STEP_HELP)


# -- summarize ---------------------------------------------------------------------------------


def _summarize_arguments(p: argparse.ArgumentParser) -> None:
    from profwin.plugin.cli import cluster_option, int_arg, window_arg

    p.add_argument(
        "trace", nargs="+",
        help="Chrome/Kineto trace (.json or .json.gz) from torch, vLLM, SGLang or profwin; several, or a folder: one per rank",
    )  # fmt: skip
    p.add_argument("--window", type=window_arg, help="only these steps (numbered by the producer's markers)")
    p.add_argument("--top", type=int_arg(0), default=20, help="operators to list by self time (default 20)")
    _first_step_option(p)
    p.add_argument(
        "--session", metavar="ID",
        help="of traces from several profiling sessions, this one (an id or its prefix; default: each rank's newest, "
        "said so); with --ray the same, on the nodes' traces",
    )  # fmt: skip
    p.add_argument(
        "--plot", metavar="PNG",
        help="draw per-step time (one trace) or a steps x ranks heat map (several); needs matplotlib",
    )  # fmt: skip
    cluster_option(p, "summarize each trace on the Ray node that holds it; only summaries travel")
    p.add_argument("--json", action="store_true", help="print as JSON")


def _one_trace(args: argparse.Namespace) -> str | list[str] | None:
    """The trace ``profwin summarize`` names when it names one: a file, a folder holding one
    trace (which then reads exactly as the file would), or the part traces of one long window
    (files or their folder, read as one); ``None`` for several, or on Ray."""
    if args.ray:
        return None
    if len(args.trace) == 1 and not Path(args.trace[0]).is_dir():
        return str(args.trace[0])  # trim's rule too; here before importing ranks (summarize FILE's start-up)
    from profwin_traces.ranks import window_parts

    units = window_parts(args.trace)
    if len(units) != 1:
        return None
    return str(units[0][0]) if len(units[0]) == 1 else [str(p) for p in units[0]]


def _summary(args: argparse.Namespace, one: str | list[str] | None) -> Any:
    """What ``profwin summarize`` shows: a :class:`~profwin_traces.Summary` of one trace (``one``)
    or the :class:`~profwin_traces.Ranks` of several (a folder, many files, or the nodes of a Ray cluster)."""
    from profwin.plugin import cluster
    from profwin_traces import tty_progress

    options = {"window": args.window, "top": args.top, "first_step": args.first_step}
    if args.ray:  # on the nodes that hold the traces; the same result as for the files on one disk
        return cluster("ray").summarize(args.trace, address=args.ray, session=args.session, **options)
    # The modules a command needs only (one trace: not those of ranks; 0.005 CPU s of a start).
    if one is not None:
        from profwin_traces import summarize

        if args.session is not None:  # one trace: it must be of that session
            from profwin_traces import choose_session, trace_facts

            choose_session([trace_facts(p) for p in ([one] if isinstance(one, str) else one)], args.session)
        shown = one if isinstance(one, str) else f"{len(one)} parts of one window"
        return summarize(one, **options, progress=tty_progress(f"reading {shown}"))
    from profwin_traces import summarize_ranks

    return summarize_ranks(args.trace, **options, progress=lambda path: tty_progress(f"reading {path}"), session=args.session)


def _summarize(args: argparse.Namespace) -> int:
    from profwin.plugin.cli import how_to_view, print_json
    from profwin_traces import Summary
    from profwin_traces.reader import trace_command

    if args.plot:
        _check_plot(args.plot, args.trace)
    with trace_command(blas=not args.ray):  # Ray's local workers inherit this process's environment
        one_trace = _one_trace(args)
        result = _summary(args, one_trace)
    one = isinstance(result, Summary)
    if args.plot:
        from profwin_traces import plot_ranks, plot_steps

        if one:
            plot_steps(result, args.plot)
        else:
            plot_ranks(result, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    if args.json:
        print_json(result.to_dict())
    elif one:  # only the form that is printed is built: the JSON form of a long trace's steps costs 0.08 s
        from profwin_traces import render_summary

        print(render_summary(result))
        if one_trace is not None:  # paths on the nodes (--ray): nothing here to open
            print("\n" + how_to_view([Path(p) for p in ([one_trace] if isinstance(one_trace, str) else one_trace)]))
    else:
        from profwin_traces import render_ranks, trace_files

        print(render_ranks(result))
        if not args.ray:  # paths on the nodes: nothing here to open
            print("\n" + how_to_view(trace_files(args.trace)))
    return 0


# -- diff --------------------------------------------------------------------------------------


def _diff_arguments(p: argparse.ArgumentParser) -> None:
    from profwin.plugin.cli import int_arg, window_arg

    p.add_argument("a", help="the trace or folder before (A)")
    p.add_argument("b", help="the trace or folder after (B)")
    p.add_argument("--window", type=window_arg, help="only these steps, on both sides")
    p.add_argument("--b-window", type=window_arg, help="other steps for B (default: --window)")
    p.add_argument("--top", type=int_arg(0), default=20, help="operators to list, largest change first (default 20)")
    _first_step_option(p)
    p.add_argument("--plot", metavar="PNG", help="draw per-operator bars of A and B (needs matplotlib)")
    p.add_argument("--json", action="store_true", help="print as JSON")


def _diff(args: argparse.Namespace) -> int:
    from profwin.plugin.cli import how_to_view, print_json
    from profwin_traces import diff, plot_diff, render_diff, trace_files
    from profwin_traces.reader import trace_command

    if args.plot:
        _check_plot(args.plot, [args.a, args.b])
    with trace_command():
        result = diff(args.a, args.b, window=args.window, b_window=args.b_window, top=args.top, first_step=args.first_step)
    if args.plot:
        plot_diff(result, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    if args.json:
        print_json(result.to_dict())
    else:
        print(render_diff(result))
        print("\n" + how_to_view([*trace_files([args.a]), *trace_files([args.b])]))
    return 0


_PLOT_FORMATS = (".png", ".pdf", ".svg", ".svgz", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".gif", ".eps", ".ps")


def _check_plot(plot: str, inputs: Sequence[str]) -> None:
    """Before any work: ``--plot`` names an image format matplotlib writes, is a path profwin
    may write (:func:`~profwin.plugin.files.check_output_path`) and is none of the inputs."""
    import os

    from profwin.plugin import ConfigError, shown
    from profwin.plugin.files import check_output_path

    if not plot.lower().endswith(_PLOT_FORMATS):
        raise ConfigError(f"--plot must name an image file ending in {', '.join(_PLOT_FORMATS)} (got {shown(plot)})", path="plot")
    target = check_output_path(plot)
    for given in inputs:
        if target.exists() and Path(given).exists() and os.path.samefile(target, given):
            raise ConfigError(f"--plot {shown(plot)} is one of the input traces; name another file", path="plot")


# -- trim --------------------------------------------------------------------------------------


def _trim_arguments(p: argparse.ArgumentParser) -> None:
    from profwin.plugin.cli import window_arg

    p.add_argument(
        "trace",
        nargs="+",
        help="Chrome/Kineto trace (.json or .json.gz), or the part traces of one long window (files or their folder)",
    )
    p.add_argument("--window", type=window_arg, required=True, help="steps to keep, START:END")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output trace file (.json or .json.gz)")
    _first_step_option(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _trim(args: argparse.Namespace) -> int:
    from profwin.plugin.cli import how_to_view, print_json
    from profwin.plugin.files import check_output_path
    from profwin_traces import trim, tty_progress
    from profwin_traces.reader import trace_command

    check_output_path(args.output)
    source = args.trace[0] if len(args.trace) == 1 else args.trace
    progress = tty_progress(f"trimming {args.trace[0] if len(args.trace) == 1 else f'{len(args.trace)} parts'}", passes=2)
    with trace_command():  # trim reads its input twice
        result = trim(source, args.window, args.output, first_step=args.first_step, progress=progress)
    if args.json:
        print_json(result.to_dict())
    else:
        print(
            f"{result.path}: steps {result.steps} ({result.step_count} steps, {result.events:,} events, {result.bytes:,} bytes)"
        )
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        print(how_to_view([result.path]))
    return 0


# -- merge -------------------------------------------------------------------------------------


def _merge_arguments(p: argparse.ArgumentParser) -> None:
    from profwin.plugin.cli import window_arg

    p.add_argument(
        "trace", nargs="+",
        help="the traces (.json or .json.gz) of one window: files, a folder of them, or a profwin collect folder",
    )  # fmt: skip
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="output trace file (.json.gz, or .json)")
    p.add_argument("--window", type=window_arg, help="only these steps; aligned on the first one every trace holds")
    _first_step_option(p)
    p.add_argument(
        "--session", metavar="ID", help="of traces from several profiling sessions, this one (default: each rank's newest)"
    )
    p.add_argument(
        "--timeline", action="append", metavar="FILE|DIR",
        help="also the session's timeline (record: [timeline]): counter tracks, one slice per request, the window marked; repeatable",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _merge(args: argparse.Namespace) -> int:
    from profwin.plugin.cli import how_to_view, print_json
    from profwin.plugin.files import check_output_path
    from profwin_traces import merge, tty_progress
    from profwin_traces.reader import trace_command

    check_output_path(args.output)

    def progress(path: Any, n: int) -> Any:
        return tty_progress(f"{'reading' if n == 1 else 'merging'} {path}")

    with trace_command():
        result = merge(
            args.trace, args.output, window=args.window, first_step=args.first_step, session=args.session, progress=progress,
            timelines=args.timeline or (),
        )  # fmt: skip
    if args.json:
        print_json(result.to_dict())
    else:
        timelines = sum(t.producer == "profwin.timeline" for t in result.traces)
        print(
            f"{result.path}: {len(result.traces) - timelines} traces"
            + (f" and {timelines} session timeline(s)" if timelines else "")
            + f", one process each, aligned on step {result.aligned_step} ({result.events:,} events, {result.bytes:,} bytes)"
        )
        for t in result.traces:
            print(f"  pid {t.pid}: {t.label}, {t.producer} steps {t.steps}, times {t.shift_us:+,.3f} us")
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        print(how_to_view([result.path]))
    return 0


# -- timeline ----------------------------------------------------------------------------------


def _timeline_arguments(p: argparse.ArgumentParser) -> None:
    from profwin.plugin.cli import int_arg

    p.add_argument(
        "timeline", nargs="+", metavar="FILE|DIR",
        help="session timelines (*.timeline.json, record: [timeline]): files, or a folder of them; several ranks or engines are compared",
    )  # fmt: skip
    p.add_argument(
        "--session", metavar="ID", help="of timelines from several profiling sessions, this one (default: the newest, said so)"
    )
    p.add_argument(
        "--length", type=int_arg(1, 2**31 - 1), default=32, metavar="N", help="steps of the suggested window (default 32)"
    )
    p.add_argument(
        "--plot", metavar="PNG",
        help="draw batch size and tokens per step over time (phases and the window shaded) and each request's lifespan; needs matplotlib",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print as JSON")


def _timeline(args: argparse.Namespace) -> int:
    from profwin.plugin.cli import print_json
    from profwin_traces.timeline import plot_timeline, read_timelines, render_timeline, timeline_report

    if args.plot:
        _check_plot(args.plot, args.timeline)
    report = timeline_report(args.timeline, session=args.session, length=args.length)
    if args.plot:
        timelines, _ = read_timelines(args.timeline, session=args.session)
        plot_timeline(report, timelines, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    if args.json:
        print_json(report.to_dict())
    else:
        print(render_timeline(report))
    return 0


# Each writes its result files whole or not at all (Ctrl-C, SIGTERM): summarize and diff their plots.
SUMMARIZE = Command(
    help="steps, per-step time, device time and top operators of traces (streaming)",
    arguments=_summarize_arguments,
    run=_summarize,
    writes_results=True,
)
DIFF = Command(
    help="compare two traces (or two folders of per-rank traces) step by step and by operator",
    arguments=_diff_arguments,
    run=_diff,
    writes_results=True,
)
TRIM = Command(
    help="write a trace holding only a window of steps (streaming)", arguments=_trim_arguments, run=_trim, writes_results=True
)
MERGE = Command(
    help="write the traces of one window as one trace, each rank or engine its own process, steps aligned",
    arguments=_merge_arguments,
    run=_merge,
    writes_results=True,
)
TIMELINE = Command(
    help="where a rollout's time goes: phases, the long tail, where the window sits, a suggested window",
    arguments=_timeline_arguments,
    run=_timeline,
    writes_results=True,
)
