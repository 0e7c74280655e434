"""Read, summarize, compare and trim torch/Kineto Chrome traces by step, streaming in bounded memory.

::

    from profwin_traces import summarize, render_summary, trim

    summary = summarize("trace.pt.trace.json.gz", window="20:80")
    print(render_summary(summary))
    trim("trace.pt.trace.json.gz", "20:80", "steps20-80.pt.trace.json.gz")

Steps are found by their producer's markers (:data:`profwin.plugin.StepMarker`, from the registry
:func:`step_markers`): ``ProfilerStep#k`` (torch.profiler and profwin sessions) from core, and each
engine plugin's own (vLLM's ``execute_…context_…`` annotations, SGLang's ``step[…]`` spans). Only
the standard library is needed; the ``fast`` extra (``pip install 'profwin-traces[fast]'``: msgspec,
numpy, isal, stringzilla) makes reading faster, the ``plot`` extra (matplotlib) draws (see
docs/traces.md). Its commands (``profwin summarize``, ``diff``, ``trim``, ``merge``, ``timeline``) join
the ``profwin`` command line through the ``profwin.commands`` entry points (:mod:`profwin_traces.commands`).

Session timelines (``record: [timeline]``) are read by :func:`timeline_report` (``profwin timeline``)
and joined to a window's traces by :func:`merge` (``timelines=``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (lazy_exports): a command imports the modules it needs only
    from profwin.plugin import TORCH_MARKER, StepMarker, step_markers
    from profwin_traces.device import DeviceStat
    from profwin_traces.diff import Diff, OpChange, StepChange, diff, render_diff
    from profwin_traces.merge import MergedTrace, MergeResult, merge
    from profwin_traces.parts import join_parts
    from profwin_traces.plot import plot_diff, plot_ranks, plot_steps
    from profwin_traces.progress import tty_progress
    from profwin_traces.ranks import (
        RankRow,
        Ranks,
        RankStat,
        StepSpread,
        TraceFacts,
        choose_session,
        merge_ranks,
        render_ranks,
        summarize_ranks,
        trace_facts,
        trace_files,
        window_parts,
    )
    from profwin_traces.reader import TraceError, TraceReader, read_trace
    from profwin_traces.steps import Step
    from profwin_traces.stream import JsonStream, fast_module
    from profwin_traces.summarize import (
        OpStat,
        StepStat,
        Summary,
        ThreadInfo,
        TraceMeta,
        count_steps,
        render_summary,
        summarize,
        token_steps,
    )
    from profwin_traces.timeline import (
        RankTimeline,
        Timeline,
        TimelineReport,
        plot_timeline,
        read_timelines,
        render_timeline,
        timeline_report,
    )
    from profwin_traces.tokens import StepTokens, parse_step_tokens
    from profwin_traces.trim import TrimResult, trim

__all__ = [
    "TORCH_MARKER",
    "DeviceStat",
    "Diff",
    "JsonStream",
    "MergeResult",
    "MergedTrace",
    "OpChange",
    "OpStat",
    "RankRow",
    "RankStat",
    "RankTimeline",
    "Ranks",
    "Step",
    "StepChange",
    "StepMarker",
    "StepSpread",
    "StepStat",
    "StepTokens",
    "Summary",
    "ThreadInfo",
    "Timeline",
    "TimelineReport",
    "TraceError",
    "TraceFacts",
    "TraceMeta",
    "TraceReader",
    "TrimResult",
    "choose_session",
    "count_steps",
    "diff",
    "fast_module",
    "join_parts",
    "merge",
    "merge_ranks",
    "parse_step_tokens",
    "plot_diff",
    "plot_ranks",
    "plot_steps",
    "plot_timeline",
    "read_timelines",
    "read_trace",
    "render_diff",
    "render_ranks",
    "render_summary",
    "render_timeline",
    "step_markers",
    "summarize",
    "summarize_ranks",
    "timeline_report",
    "token_steps",
    "trace_facts",
    "trace_files",
    "trim",
    "tty_progress",
    "window_parts",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin.plugin": ("TORCH_MARKER", "StepMarker", "step_markers"),
        "profwin_traces.device": ("DeviceStat",),
        "profwin_traces.diff": ("Diff", "OpChange", "StepChange", "diff", "render_diff"),
        "profwin_traces.merge": ("MergeResult", "MergedTrace", "merge"),
        "profwin_traces.parts": ("join_parts",),
        "profwin_traces.plot": ("plot_diff", "plot_ranks", "plot_steps"),
        "profwin_traces.progress": ("tty_progress",),
        "profwin_traces.ranks": (
            "RankRow", "Ranks", "RankStat", "StepSpread", "TraceFacts", "choose_session", "merge_ranks",
            "render_ranks", "summarize_ranks", "trace_facts", "trace_files", "window_parts",
        ),
        "profwin_traces.reader": ("TraceError", "TraceReader", "read_trace"),
        "profwin_traces.steps": ("Step",),
        "profwin_traces.stream": ("JsonStream", "fast_module"),
        "profwin_traces.summarize": (
            "OpStat", "StepStat", "Summary", "ThreadInfo", "TraceMeta", "count_steps", "render_summary", "summarize",
            "token_steps",
        ),
        "profwin_traces.timeline": (
            "RankTimeline", "Timeline", "TimelineReport", "plot_timeline", "read_timelines", "render_timeline",
            "timeline_report",
        ),
        "profwin_traces.tokens": ("StepTokens", "parse_step_tokens"),
        "profwin_traces.trim": ("TrimResult", "trim"),
    },
)  # fmt: skip
