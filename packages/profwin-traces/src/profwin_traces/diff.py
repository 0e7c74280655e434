"""``diff``: two traces (or two folders of per-rank traces) step by step and operator by operator.

For each side: the window's step times (a folder's step time is its slowest rank's, which is
what the step costs the job) and each operator's and kernel's self time **per step** (a
folder's is the mean over its ranks), so windows of different lengths compare. The change is
``B - A``; its **share** is the operator's change over the change of the mean step time, which
says how much of the difference it explains.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from attrs import frozen

from profwin.plugin import ConfigError, JsonForm, Window, checked, shown
from profwin_traces.ranks import summarize_ranks, trace_files
from profwin_traces.summarize import Summary, short_name, summarize
from profwin_traces.tokens import StepTokens

__all__ = ["Diff", "OpChange", "StepChange", "diff", "render_diff"]

_ALL_OPS = 1 << 30  # summarize every operator: a diff needs the ones that vanished too


@frozen
class StepChange:
    step: int
    a_us: float | None
    b_us: float | None
    change_us: float | None
    a_tokens: StepTokens | None = None
    b_tokens: StepTokens | None = None
    """What the step held on each side, from its ``profwin.tokens`` annotation (a folder's: its
    lowest rank's); ``None`` where it has none."""


@frozen
class OpChange:
    """One operator or kernel name: self time per step on each side (0 where it did not run)."""

    name: str
    kernel: bool
    a_us: float
    b_us: float
    change_us: float
    a_calls: float
    b_calls: float
    """Calls per step on each side."""
    share: float | None
    """``change_us`` over the change of the mean step time (``None`` when that is 0)."""


@frozen
class Diff(JsonForm):
    """What :func:`diff` found; ``to_dict()`` is ``profwin diff --json``."""

    a: str
    b: str
    a_steps: int
    b_steps: int
    a_mean_us: float
    b_mean_us: float
    a_median_us: float
    b_median_us: float
    change_us: float
    """Change of the mean step time, ``B - A``."""
    ratio: float | None
    """``B / A`` of the mean step time."""
    steps: tuple[StepChange, ...]
    ops: tuple[OpChange, ...]
    """The operators and kernels whose time changed most, largest change first."""

    @property
    def unchanged(self) -> bool:
        """The same steps with the same times, and no operator's time or calls changed."""
        return all(s.change_us == 0.0 and s.a_tokens == s.b_tokens for s in self.steps) and all(
            o.change_us == 0.0 and o.a_calls == o.b_calls for o in self.ops
        )


def _side(
    path: str | Path, window: Window | str | None, first_step: int | None, session: str | None = None
) -> tuple[dict[int, float], dict[tuple[str, bool], tuple[float, float]], dict[int, StepTokens]]:
    """Step times by number, self time and calls per step by (name, is_kernel), and what each
    step held (its lowest rank's annotation)."""
    files = trace_files([path])
    summaries: list[Summary]
    if len(files) == 1:  # a trace, or a folder holding one: the same answer
        summaries = [summarize(files[0], window=window, top=_ALL_OPS, first_step=first_step)]
    else:
        ranks = summarize_ranks(files, window=window, top=_ALL_OPS, first_step=first_step, session=session)
        summaries = list(ranks.summaries)
    steps: dict[int, float] = {}
    tokens: dict[int, StepTokens] = {}
    for s in summaries:
        for st in s.steps:
            if st.in_window:
                steps[st.number] = max(steps.get(st.number, 0.0), st.dur_us)
                if st.tokens is not None:
                    tokens.setdefault(st.number, st.tokens)
    ops: dict[tuple[str, bool], tuple[float, float]] = {}
    for s in summaries:
        n = int(s.step_us["count"]) * len(summaries)
        for kernel, rows in ((False, s.top_ops), (True, s.top_kernels)):
            for op in rows:
                us, calls = ops.get((op.name, kernel), (0.0, 0.0))
                ops[(op.name, kernel)] = (us + op.self_us / n, calls + op.count / n)
    return steps, ops, tokens


@checked
def diff(
    a: str | Path,
    b: str | Path,
    *,
    window: Window | str | None = None,
    b_window: Window | str | None = None,
    top: int = 20,
    first_step: int | None = None,
) -> Diff:
    """Compare the window's steps of ``a`` and ``b`` (each a trace or a folder of per-rank
    traces). ``b_window`` defaults to ``window``; ``top`` operators are listed."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise ConfigError(f"must be a non-negative int (got {shown(top)})", path="top")
    a_steps, a_ops, a_tokens = _side(a, window, first_step)
    b_steps, b_ops, b_tokens = _side(b, window if b_window is None else b_window, first_step)
    a_mean, b_mean = statistics.fmean(a_steps.values()), statistics.fmean(b_steps.values())
    change = b_mean - a_mean
    ops = []
    for key in set(a_ops) | set(b_ops):
        (x, x_calls), (y, y_calls) = a_ops.get(key, (0.0, 0.0)), b_ops.get(key, (0.0, 0.0))
        ops.append(
            OpChange(
                name=key[0],
                kernel=key[1],
                a_us=round(x, 3),
                b_us=round(y, 3),
                change_us=round(y - x, 3),
                a_calls=round(x_calls, 3),
                b_calls=round(y_calls, 3),
                share=round((y - x) / change, 4) if change else None,
            )
        )
    ops.sort(key=lambda o: (-abs(o.change_us), o.name))
    steps = [
        StepChange(
            step=n,
            a_us=a_steps.get(n),
            b_us=b_steps.get(n),
            change_us=round(b_steps[n] - a_steps[n], 3) if n in a_steps and n in b_steps else None,
            a_tokens=a_tokens.get(n),
            b_tokens=b_tokens.get(n),
        )
        for n in sorted(set(a_steps) | set(b_steps))
    ]
    return Diff(
        a=str(a),
        b=str(b),
        a_steps=len(a_steps),
        b_steps=len(b_steps),
        a_mean_us=round(a_mean, 3),
        b_mean_us=round(b_mean, 3),
        a_median_us=round(statistics.median(a_steps.values()), 3),
        b_median_us=round(statistics.median(b_steps.values()), 3),
        change_us=round(change, 3),
        ratio=round(b_mean / a_mean, 4) if a_mean else None,
        steps=tuple(steps),
        ops=tuple(ops[:top]),
    )


def _brief(t: StepTokens | None) -> str:
    """A step's annotation in a few words, for the diff's step table."""
    if t is None:
        return "-"
    tokens = f" ({t.token_min}..{t.token_max})" if t.token_min is not None else ""
    return f"{t.decoding} dec{tokens}, {t.prefill_tokens} prompt"


def _held_per_step(found: Sequence[StepTokens | None]) -> str:
    """Means over one side's annotated steps, in a line."""
    held = [t for t in found if t is not None]
    if not held:
        return "no step annotated"
    n = len(held)
    return (
        f"{n} steps annotated; a step: {sum(t.decoding for t in held) / n:.1f} requests decoding, "
        f"{sum(t.prefill_tokens for t in held) / n:.1f} prompt tokens of {sum(t.prefilling for t in held) / n:.1f} prefills"
    )


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.3f} ms"


@checked
def render_diff(d: Diff, *, max_steps: int = 20) -> str:
    """The diff as text for a terminal."""
    ratio = "" if d.ratio is None else f" ({d.ratio:.3f}x)"
    lines = [
        f"A  {d.a}: {d.a_steps} steps, mean {_ms(d.a_mean_us)}, median {_ms(d.a_median_us)}",
        f"B  {d.b}: {d.b_steps} steps, mean {_ms(d.b_mean_us)}, median {_ms(d.b_median_us)}",
        f"mean step time change B - A: {d.change_us / 1000:+.3f} ms{ratio}",
    ]
    if d.unchanged:
        lines.append(f"no change: the {d.a_steps} steps and every operator's self time per step are the same in A and B")
        return "\n".join(lines)
    annotated = any(s.a_tokens is not None or s.b_tokens is not None for s in d.steps)
    if annotated:
        lines += [f"held  {side}: {_held_per_step([getattr(s, f'{side.lower()}_tokens') for s in d.steps])}" for side in "AB"]
    lines += ["", (f"{'step':>6} {'A':>12} {'B':>12} {'B - A':>12}" + (f"  {'A held':<24} B held" if annotated else ""))]
    rows: Sequence[StepChange] = d.steps[:max_steps]
    lines += [
        f"{s.step:>6} {_ms(s.a_us):>12} {_ms(s.b_us):>12} {'-' if s.change_us is None else f'{s.change_us / 1000:+.3f} ms':>12}"
        + (f"  {_brief(s.a_tokens):<24} {_brief(s.b_tokens)}" if annotated else "")
        for s in rows
    ]
    if len(d.steps) > max_steps:
        lines.append(f"  ... {len(d.steps) - max_steps} more steps (--json lists all)")
    if annotated:
        lines.append("  held: requests decoding (their tokens' indices min..max), prompt tokens prefilled (profwin.tokens)")
    lines += ["", "self time per step, largest change first", f"{'A':>12} {'B':>12} {'B - A':>12} {'share':>7}  name"]
    for o in d.ops:
        share = "" if o.share is None else f"{100 * o.share:.0f} %"
        kind = " [kernel]" if o.kernel else ""
        if o.change_us:
            lines.append(
                f"{_ms(o.a_us):>12} {_ms(o.b_us):>12} {o.change_us / 1000:>+9.3f} ms {share:>7}  {short_name(o.name)}{kind}"
            )
    if not any(o.change_us for o in d.ops):
        lines.append("  (no operator's self time per step changed)")
    return "\n".join(lines)
