"""An :class:`~profwin.EnginePlan` as text to paste: launch flags, Python keywords, exports, the
per-session request. One renderer for every engine, so ``profwin args`` reads the same for all."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from profwin.arguments import checked
from profwin.errors import ConfigError, shown
from profwin.json_form import json_ready

if TYPE_CHECKING:  # rendering reads a plan; the CLI's parser needs FORMS without the engine module
    import profwin.engine  # as a dotted hint, which the argument check resolves only for a value that needs it
    from profwin.window import Window

__all__ = ["FORMS", "plan_comments", "render_plan"]

FORMS: tuple[str, ...] = ("serve", "python", "env", "json", "curl")
"""``serve``: launch flags; ``python``: launch keywords and the ``start_profile`` call; ``env``:
shell exports; ``json``: the per-session request body; ``curl``: that request as a command."""

_ALIASES = {"llm": "python", "engine": "python", "http": "json"}


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def _steps(window: Window | None) -> str:
    if window is None:
        return "from the start to the stop"
    last = "the stop" if window.last is None else str(window.last)
    return f"{window.start}..{last} (0-based)"


def _comments(plan: profwin.engine.EnginePlan) -> list[str]:
    head = f"# {plan.engine} {plan.version or '(version unknown)'}: "
    if plan.window.in_tokens:
        lines = [
            f"{head}records the steps that produce response tokens {plan.window} of each profiling session "
            "(the engine decides, docs/window.md)"
        ]
    else:
        lines = [f"{head}records engine steps {_steps(plan.records)} of each profiling session"]
        if plan.records != plan.window:
            lines.append(f"# and keeps steps {_steps(plan.window)}")
    if not plan.per_session:
        lines.append(f"# the window is fixed when the engine starts ({plan.mechanism})")
    if plan.server_requirement:
        lines.append(f"# needs: {plan.server_requirement}")
    if plan.fallback:
        lines.append(f"# without it: {plan.fallback}")
    lines += [f"# note: {note}" for note in plan.notes]
    if plan.alternative:
        lines.append(
            f"# with {plan.alternative['needs']}: send {_compact(json_ready(plan.alternative['request']))} instead "
            f"(records {plan.alternative['records']})"
        )
    return lines


@checked
def plan_comments(plan: profwin.engine.EnginePlan) -> list[str]:
    """What the user must know about ``plan`` beside its numbers, as ``#`` lines: what it records,
    what it needs where the engine runs (``server_requirement``) and what happens without it
    (``fallback``), its notes, and a more exact request with what that needs (``alternative``).
    Every text form of :func:`render_plan` that has room for comments carries them, and ``profwin
    args`` prints them on stderr."""
    return _comments(plan)


def _request(plan: profwin.engine.EnginePlan, form: str) -> Mapping[str, Any]:
    if plan.request is None:
        raise ConfigError(
            f"{plan.engine} {plan.version} takes no per-session request ({plan.mechanism}: the window is fixed at "
            f"launch); use the 'serve' or 'python' form (got {shown(form)})",
            path="form",
        )
    return plan.request


@checked
def render_plan(plan: profwin.engine.EnginePlan, form: str) -> str:
    """``plan`` as one of :data:`FORMS` (``llm``/``engine`` mean ``python``, ``http`` means ``json``)."""
    chosen = _ALIASES.get(form, form)
    if chosen not in FORMS:
        raise ConfigError(f"must be one of {list(FORMS)} (got {shown(form)})", path="form")
    if chosen == "json":
        return json.dumps(dict(_request(plan, form)), indent=2, allow_nan=False)
    if chosen == "curl":
        body = _compact(dict(_request(plan, form)))
        return "\n".join(
            [
                *_comments(plan),
                f"curl -sS -X POST \"$URL/start_profile\" -H 'Content-Type: application/json' -d {shlex.quote(body)}",
            ]
        )
    if chosen == "env":
        if not plan.env:
            raise ConfigError(
                f"{plan.engine} {plan.version} takes its profiler settings as launch arguments, not environment "
                "variables: use the 'serve' or 'python' form",
                path="form",
            )
        return "\n".join([*(f"export {k}={shlex.quote(str(v))}" for k, v in plan.env.items()), *_comments(plan)])
    if chosen == "serve":
        flags = [
            f"--{key.replace('_', '-')} {shlex.quote(v if isinstance(v, str) else _compact(v))}" for key, v in plan.launch.items()
        ]
        lines = flags or ["# no launch arguments needed"]
        lines += _comments(plan)
        if plan.env:
            lines.append("# launch environment: " + " ".join(f"{k}={shlex.quote(str(v))}" for k, v in plan.env.items()))
        if plan.request is not None:
            lines.append(
                "# per session: curl -X POST <url>/start_profile -H 'Content-Type: application/json' "
                f"-d {shlex.quote(_compact(dict(plan.request)))}"
            )
        return "\n".join(lines)
    lines = [f"{key}={value!r}" for key, value in ((k, json_ready(v)) for k, v in plan.launch.items())]
    lines += _comments(plan)
    if plan.request is not None:
        call = ", ".join(f"{k}={json_ready(v)!r}" for k, v in plan.request.items())
        lines.append(f"# then: engine.start_profile({call})")
    return "\n".join(lines)
