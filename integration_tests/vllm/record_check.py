"""A token window's trace judged against vLLM's own record of the session (step_record.py).

Standard library only: the tests run it in the development environment on what the engine
scripts reported. The expected steps come from the record through the rule of docs/window.md as
token_rule.py writes it out, never through profwin.runtime.tokens.
"""

from __future__ import annotations

import re
from typing import Any

from ..token_rule import expected_steps, fields, held, produced_by_step

__all__ = ["CONTEXT", "check_token_trace", "produced", "totals"]

CONTEXT = re.compile(r"execute_context_(\d+)\((\d+)\)_generation_\d+\(\d+\)")
"""vLLM's step annotation: requests with prompt tokens in the step (and how many such tokens)."""


def totals(record: list[dict[str, Any]]) -> list[dict[str, int]]:
    """Each request's tokens so far after each step, from the per-step sampled counts."""
    made: dict[str, int] = {}
    result = []
    for step in record:
        for request, count in step["sampled"].items():
            made[request] = made.get(request, 0) + count
        result.append({request: made[request] for request in step["sampled"]})
    return result


def produced(record: list[dict[str, Any]]) -> list[list[int]]:
    """The response-token indices each step of the record produced."""
    return produced_by_step(totals(record))


def check_token_trace(window: str, record: list[dict[str, Any]], names: list[str], first: int = 0) -> range | None:
    """Assert that a trace whose step annotations and ``profwin.tokens`` annotations are ``names``
    (in time order) holds exactly the steps the token rule gives for ``window`` (``"2:6"``) from
    ``record``: vLLM's own annotation of each, each enclosed by profwin's, which says what the step
    held. ``record[first]`` is the session's step 0 (the steps before it ran before the session
    started: their tokens count, as each request counts from its own first token). Returns those
    session steps (``None`` when no step produced a token in the window, and then the trace must
    hold none)."""
    made = produced(record)
    steps = expected_steps(window, made[first:])
    if steps is None:
        assert names == [], names
        return None
    ours = [fields(n) for n in names if n.startswith("profwin.tokens")]
    vllms = [n for n in names if n.startswith("execute_")]
    # Exactly the expected steps, in order: vLLM's own annotation of each, each enclosed by ours.
    assert vllms == [record[first + s]["annotation"] for s in steps], (window, list(steps), vllms)
    assert names == [n for pair in zip([n for n in names if n.startswith("profwin.tokens")], vllms, strict=True) for n in pair]
    for k, (s, annotation) in enumerate(zip(steps, ours, strict=True)):
        row = record[first + s]
        context = CONTEXT.fullmatch(row["annotation"])
        assert context is not None, row
        assert annotation == {
            "window_step": str(k),
            **held(window, made[first + s]),
            "prefilling": context.group(1),
            "prefill_tokens": context.group(2),
            "session_step": str(s),
        }, (s, row)
    return steps
