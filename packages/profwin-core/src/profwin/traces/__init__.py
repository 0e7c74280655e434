"""Read, summarize, compare and trim torch/Kineto Chrome traces by step, streaming in bounded memory.

::

    from profwin.traces import summarize, render_summary, trim

    summary = summarize("trace.pt.trace.json.gz", window="20:80")
    print(render_summary(summary))
    trim("trace.pt.trace.json.gz", "20:80", "steps20-80.pt.trace.json.gz")

Session timelines (``record: [timeline]``) are read by :func:`timeline_report` (``profwin timeline``)
and joined to a window's traces by :func:`merge` (``timelines=``).

Steps are found by their producer's markers (:mod:`profwin.markers`): ``ProfilerStep#k``
(torch.profiler and profwin sessions) from core, and each engine plugin's own (vLLM's
``execute_…context_…`` annotations, SGLang's ``step[…]`` spans). Only the standard library is
needed; msgspec, when installed (``profwin-core[fast]``), makes reading faster (see docs/traces.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.lazy): a command imports the modules it needs only
    from profwin.discovery import step_markers
    from profwin.markers import TORCH_MARKER, StepMarker
    from profwin.traces.device import DeviceStat
    from profwin.traces.diff import Diff, OpChange, StepChange, diff, render_diff
    from profwin.traces.merge import MergedTrace, MergeResult, merge
    from profwin.traces.parts import join_parts
    from profwin.traces.plot import plot_diff, plot_ranks, plot_steps
    from profwin.traces.progress import tty_progress
    from profwin.traces.ranks import (
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
    from profwin.traces.reader import TraceError, TraceReader, read_trace
    from profwin.traces.steps import Step
    from profwin.traces.summarize import (
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
    from profwin.traces.timeline import (
        RankTimeline,
        Timeline,
        TimelineReport,
        plot_timeline,
        read_timelines,
        render_timeline,
        timeline_report,
    )
    from profwin.traces.tokens import StepTokens, parse_step_tokens
    from profwin.traces.trim import TrimResult, trim

__all__ = [
    "TORCH_MARKER",
    "DeviceStat",
    "Diff",
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
        "profwin.discovery": ("step_markers",),
        "profwin.markers": ("TORCH_MARKER", "StepMarker"),
        "profwin.traces.device": ("DeviceStat",),
        "profwin.traces.diff": ("Diff", "OpChange", "StepChange", "diff", "render_diff"),
        "profwin.traces.merge": ("MergeResult", "MergedTrace", "merge"),
        "profwin.traces.parts": ("join_parts",),
        "profwin.traces.plot": ("plot_diff", "plot_ranks", "plot_steps"),
        "profwin.traces.progress": ("tty_progress",),
        "profwin.traces.ranks": (
            "RankRow", "Ranks", "RankStat", "StepSpread", "TraceFacts", "choose_session", "merge_ranks",
            "render_ranks", "summarize_ranks", "trace_facts", "trace_files", "window_parts",
        ),
        "profwin.traces.reader": ("TraceError", "TraceReader", "read_trace"),
        "profwin.traces.steps": ("Step",),
        "profwin.traces.summarize": (
            "OpStat", "StepStat", "Summary", "ThreadInfo", "TraceMeta", "count_steps", "render_summary", "summarize",
            "token_steps",
        ),
        "profwin.traces.timeline": (
            "RankTimeline", "Timeline", "TimelineReport", "plot_timeline", "read_timelines", "render_timeline",
            "timeline_report",
        ),
        "profwin.traces.tokens": ("StepTokens", "parse_step_tokens"),
        "profwin.traces.trim": ("TrimResult", "trim"),
    },
)  # fmt: skip
