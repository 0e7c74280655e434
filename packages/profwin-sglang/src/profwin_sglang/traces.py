"""The files an SGLang profiling session writes: finding them, counting their batches, trimming.

SGLang 0.5.23 names them (``srt/managers/scheduler_components/profiler_manager.py``)::

    {prefix}-{profile_id}-TP-{tp}[-DP-{dp}][-PP-{pp}][-EP-{ep}][-EXTEND|-DECODE].trace.json.gz
    {prefix}-{profile_id}-TP-{tp}[...][-prefill|-decode].trace.json.gz   (SGLANG_PROFILE_V2=1)
    merged-{profile_id}.trace.json.gz                      (merge_profiles, written by rank 0)
    {prefix}-{time.time()}-TP-{tp}-memory[-EXTEND|-DECODE].pickle        (MEM: no profile_id)

Each scheduler batch's forward is one ``step[MODE bs=... ]`` span (``profile_range`` in
``model_runner``): that is what a "step" is. Reading and trimming are core's
(:mod:`profwin_traces`, which knows SGLang's markers).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from profwin.plugin import TORCH_MARKER, Artifact, Window, checked
from profwin.plugin.engines import EnginePlan, timeline_artifacts
from profwin_sglang._plugin import STEP_MARKER
from profwin_traces import TraceError, count_steps, token_steps, trim

__all__ = ["collect", "trim_in_place"]

_TP = re.compile(r"-TP-(\d+)")
# Named, not looked up: the engine process may have profwin on PYTHONPATH without the entry
# points that fill the registry. torch's marker first, as the registry would rank it.
_MARKERS = (TORCH_MARKER, STEP_MARKER)
# After "not in progress" the auto-stop has written the files; give a slow disk this long to show them.
_FILES_GRACE_S = 2.0


@checked
def trim_in_place(path: str | os.PathLike[str], keep: Window) -> int:
    """Cut a trace down to its batches ``keep`` (numbered from 0 in trace order) with
    :func:`profwin_traces.trim`, replacing the file; returns the number of batches kept (0: the
    trace holds none of them and is left as it was)."""
    path = Path(path)
    partial = path.with_name(f".profwin-trim-{path.name}")
    try:
        result = trim(path, keep, partial, markers=_MARKERS)
    except TraceError:
        return 0
    os.replace(partial, path)
    return result.step_count


def _kind(name: str, plan: EnginePlan) -> str | None:
    """What this session's file ``name`` is, or ``None`` when it is not this session's.

    With the client's ``profile_id`` (SGLang >= 0.5.23 keeps it) traces are matched by name;
    otherwise, and always for MEM snapshots (named by the server's clock), by prefix among the
    files written since the start.
    """
    prefix, profile_id = plan.details["prefix"], plan.details["profile_id"]
    if plan.details["client_profile_id"]:
        if name.startswith(f"{prefix}-{profile_id}-") and name.endswith(".trace.json.gz"):
            return "trace"
        if name == f"merged-{profile_id}.trace.json.gz":
            return "merged-trace"
    elif name.startswith(f"{prefix}-") and name.endswith(".trace.json.gz"):
        return "trace"
    if name.startswith(f"{prefix}-") and name.endswith(".pickle") and "-memory" in name:
        return "memory-snapshot"
    return None


def _found(plan: EnginePlan, files: Callable[[], list[Path]]) -> list[tuple[Path, str]]:
    return [(path, kind) for path in files() if (kind := _kind(path.name, plan)) is not None]


def collect(
    plan: EnginePlan, files: Callable[[], list[Path]], *, stopped: bool, producer: str, ran: int | None = None
) -> tuple[list[Artifact], list[str]]:
    """This session's files among those written since the start, with the steps each holds;
    trims them when the plan records more than the window.

    The steps come from the trace, never from the request: its batches are counted
    (:func:`profwin_traces.count_steps`), and a relative window is checked against ``ran``, the
    batches the server's own counters say it ran since the start. What does not match what was
    asked is a note (a :class:`~profwin.WindowWarning` for the caller) saying what the trace holds."""
    found = _found(plan, files)
    deadline = time.monotonic() + _FILES_GRACE_S
    while not found and not stopped and time.monotonic() < deadline:
        time.sleep(0.2)
        found = _found(plan, files)
    notes: list[str] = []
    artifacts: list[Artifact] = []
    for path, kind in found:
        steps: Window | None
        if plan.mechanism == "by-stage":
            steps = None
        elif kind in ("trace", "merged-trace") and plan.mechanism == "tokens":
            # The steps the server's plugin chose, from its annotations; none: the window was never reached.
            try:
                steps = token_steps(path)
            except TraceError as exc:  # kept whole: what the server wrote, its steps unknown
                notes.append(f"{path.name}: its steps could not be read ({exc.reason}); it holds what the server recorded")
                steps = None
            else:
                if steps is None:
                    path.unlink(missing_ok=True)
                    continue
        elif kind in ("trace", "merged-trace"):
            held = _batches(path, notes)
            if held == 0 and (ran is None or ran <= plan.window.start):
                # Nothing ran, or markers profwin does not know: the file stays as the server wrote
                # it, and is no trace of the window, so the stop says nothing was recorded.
                notes.append(f"{path.name} holds no batch: window {plan.window} never started (left as the server wrote it)")
                continue
            if plan.mechanism != "trim":
                steps = _held(path, plan, held, stopped=stopped, ran=ran, notes=notes)
            elif held is not None and held <= plan.window.start:
                # Every batch it holds ran before the window: all of it is cut out.
                notes.append(f"the server ran {held} batch(es) of {plan.records}: window {plan.window} never started")
                path.unlink(missing_ok=True)
                continue
            else:
                steps = _trim(path, plan, held, notes)
        else:  # a memory snapshot: nothing in it to count
            steps = plan.records
        match = _TP.search(path.name)
        rank = int(match.group(1)) if match else 0
        artifacts.append(
            Artifact(path=path.absolute(), steps=steps, bytes=path.stat().st_size, rank=rank, kind=kind, producer=producer)
        )
    if plan.mechanism == "trim" and any(a.kind == "memory-snapshot" for a in artifacts):
        notes.append(f"memory snapshots cannot be trimmed and hold steps {plan.records}")
    if plan.details.get("timeline"):  # the schedulers wrote it at the stop, before they answered
        artifacts += timeline_artifacts(files(), prefix=str(plan.details["prefix"]), producer=producer)
    return artifacts, notes


def _batches(path: Path, notes: list[str]) -> int | None:
    """The batches a trace holds; ``None`` (and a note) when it cannot be read."""
    try:
        return count_steps(path, markers=_MARKERS)
    except TraceError as exc:
        notes.append(f"{path.name}: its steps could not be counted ({exc.reason}); it holds what the server recorded")
        return None


def _held(path: Path, plan: EnginePlan, held: int | None, *, stopped: bool, ran: int | None, notes: list[str]) -> Window | None:
    """The session steps a relative or immediate trace of ``held`` batches holds: as many, from the
    window's start, when the server's counters allow it; else what they prove, or ``None``."""
    window = plan.window
    if held is None:
        return None
    if held == 0:
        notes.append(f"{path.name} holds no batch, though the server ran {ran} since the start: it holds what it recorded")
        return None
    if ran is not None and window.start + held > ran:
        # More batches than the server ran since the start could hold from the window's start.
        said = f"{path.name} holds {held} batch(es), but the server ran {ran} since the start"
        if held == ran:
            notes.append(
                f"{said}: it holds steps 0:{ran}, not window {window}; the server reports the profwin-sglang plugin "
                "but did not apply the relative start"
            )
            return Window(0, ran)
        notes.append(
            f"{said}: they cannot be steps {window.start}:{window.start + held}, and where they lie in steps 0:{ran} is "
            "unknown; the server reports the profwin-sglang plugin but did not apply the relative start"
        )
        return None
    steps = window.clip(window.start + held) if stopped else Window(window.start, window.start + held)
    if not stopped and window.end is not None and held != window.length:
        notes.append(
            f"{path.name} holds {held} batch(es), not window {window}'s {window.length}: it holds steps {steps} "
            "as far as its batches tell"
        )
    return steps


def _trim(path: Path, plan: EnginePlan, held: int | None, notes: list[str]) -> Window | None:
    """Cut a trace of ``held`` batches, some in the window, down to it; ``None`` when it cannot be
    read or cut: it then stays whole, as the start said it would."""
    kept = 0 if held is None else trim_in_place(path, plan.window)
    if not kept:
        notes.append(f"{path.name} could not be trimmed: it holds all that was recorded (at most steps {plan.records})")
        return None
    notes.append(f"trace trimmed from {held} recorded batch(es) to steps {plan.window.start}:{plan.window.start + kept}")
    return Window(plan.window.start, plan.window.start + kept)
