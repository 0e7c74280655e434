"""Read, summarize and trim torch/Kineto Chrome traces by step, streaming in bounded memory.

::

    from profwin.traces import summarize, render_summary, trim

    summary = summarize("rank0.pt.trace.json.gz", window="20:80")
    print(render_summary(summary))
    trim("rank0.pt.trace.json.gz", "20:80", "steps20-80.pt.trace.json.gz")

Steps are found by their producer's markers (:mod:`profwin.traces.steps`): ``ProfilerStep#k``
(torch.profiler and profwin sessions), vLLM's ``execute_context_…_generation_…`` annotations,
SGLang's ``step[…]`` spans. Only the standard library is needed (see docs/traces.md).
"""

import os
from pathlib import Path

from profwin.traces.plot import plot_steps
from profwin.traces.progress import tty_progress
from profwin.traces.reader import TraceError, TraceReader, read_trace
from profwin.traces.steps import PRODUCERS, Step
from profwin.traces.summarize import OpStat, StepStat, Summary, ThreadInfo, TraceMeta, render_summary, summarize
from profwin.traces.trim import TrimResult, trim


def count_steps(path: str | os.PathLike[str]) -> int:
    """How many steps (of any producer's markers) a trace holds; 0 when it holds none."""
    try:
        return len(summarize(Path(path), top=0).steps)
    except TraceError:
        return 0


__all__ = [
    "PRODUCERS",
    "OpStat",
    "Step",
    "StepStat",
    "Summary",
    "ThreadInfo",
    "TraceError",
    "TraceMeta",
    "TraceReader",
    "TrimResult",
    "count_steps",
    "plot_steps",
    "read_trace",
    "render_summary",
    "summarize",
    "trim",
    "tty_progress",
]
