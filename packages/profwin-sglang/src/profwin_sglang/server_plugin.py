"""The SGLang-side half of profwin-sglang: windows relative to the session, windows in tokens,
and a scheduler that never dies of a profile request.

SGLang's ``start_step`` is an absolute value of each scheduler's ``forward_ct`` (batches since
launch, never reset, not exposed anywhere), so a client cannot say "the 20th batch from now",
nor "the batches that produce tokens 20..80". SGLang >= 0.5.23 loads *general plugins* in every
server process (entry-point group ``sglang.srt.plugins``); installing profwin-sglang beside SGLang
registers :func:`register` there, which installs two hooks in each scheduler process:

* ``SchedulerProfilerManager._profile`` (every ``/start_profile`` and ``/stop_profile``):

  - a ``start_step`` in ``[RELATIVE_BASE, 2 * RELATIVE_BASE)`` means "``start_step -
    RELATIVE_BASE`` batches after this one": SGLang's own profiler (legacy) gets it rewritten to
    ``forward_ct + 1 + offset``, on the scheduler thread, between batches, exactly where SGLang
    reads the counter itself;
  - a ``start_step`` from :data:`profwin.runtime.tokens.TOKEN_BASE` is a token window
    (:func:`profwin.plugin.engines.decode_tokens`), decided batch by batch by profwin's one rule
    (:class:`profwin.plugin.engines.TokenRule`) from each batch's requests, with each recorded batch
    annotated (``profwin.tokens ...``);
  - under ``SGLANG_PROFILE_V2=1``, whose profiler asserts ``start_step is None`` and raises on a
    manual stop (taking the scheduler down), profwin's relative and token windows are recorded by
    this plugin with the v2 profiler's own start and stop, and any request the v2 profiler cannot
    take is answered with an error naming ``SGLANG_PROFILE_V2`` instead of reaching it.

  - a ``start_step`` carrying profwin's timeline flag (:func:`profwin.plugin.engines.decode_timeline`,
    ``record: [timeline]``) loses it, and once the request is taken, the scheduler's session
    timeline starts: its ``run_batch`` and ``process_batch_result`` are wrapped on the instance
    until the stop, each batch read by :func:`_batch_tokens` with the waiting queue and the running
    batch, its end and finished requests after its result (:class:`_Timeline`);

  Any other request passes through untouched, so clients that send absolute steps see stock
  behaviour. While a window is armed, one more function runs per batch (the manager's
  ``_profile_batch_predicate``, replaced on the instance and given back when the window ends);
  otherwise nothing runs per batch.
* ``SchedulerInternalStateController.get_internal_state``: adds ``"profwin_sglang"`` (the
  protocol, the bases, token windows, which profiler runs, and the live ``forward_ct``) to each
  scheduler's entry of ``/server_info``'s ``internal_states``: how clients learn what works.

A server *without* this plugin reads an encoded ``start_step`` as an absolute step it never
reaches and records nothing; clients send the encoding only to servers that report the plugin on
every scheduler. The first profile request a scheduler process receives also runs one throwaway
CPU profiler session there (:func:`warm_profiler`), so the process's one-time profiler costs are
paid between batches, not in the window's first batch.

This module imports nothing from profwin or sglang at import time: SGLang loads it early in every
process, and it must stay cheap and never break a server. If SGLang's internals moved (another
version), the hooks are not installed, the capability is not reported, and clients fall back.
Where a client must decide before the server runs (verl's builders run in the process that
launches SGLang), :func:`unavailable_here` answers from the SGLang installed in that process,
without importing it.
"""

from __future__ import annotations

import collections
import gc
import importlib.util
import logging
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["PROTOCOL", "RELATIVE_BASE", "TIMELINE", "decode_relative", "register", "unavailable_here", "warm_profiler"]

RELATIVE_BASE = 1 << 40
"""Offset that marks a ``start_step`` as relative; 2**40 batches is decades of serving."""

PROTOCOL = 1
"""Version of the relative windows; clients check it in ``/server_info``. Token windows and the v2
profiler are reported by keys of their own (``token_windows``, ``profiler``)."""

TOKEN_WINDOWS = 1
"""Version of the token windows, reported as ``token_windows`` beside :data:`PROTOCOL`."""

TIMELINE = 1
"""Version of the session timeline the plugin records (``record: [timeline]``), reported as
``timeline``: clients send the timeline flag (:func:`profwin.plugin.engines.encode_timeline`) only to
servers whose every scheduler says it."""

STATE_KEY = "profwin_sglang"

_PROFILE = "sglang.srt.managers.scheduler_components.profiler_manager.SchedulerProfilerManager._profile"
_INTERNAL_STATE = "sglang.srt.managers.scheduler_components.internal_state.SchedulerInternalStateController.get_internal_state"
_DISTRIBUTION = "profwin-sglang"
_ENTRY_GROUP = "sglang.srt.plugins"
FIRST_VERSION = "0.5.23"
"""The first SGLang release the hooks are known to install on (0.5.12 has no ``HOOK_PACKAGE``)."""
HOOK_PACKAGE = "sglang.srt.managers.scheduler_components"
"""Where the hooked classes live; SGLang 0.5.12 keeps the profiler in a scheduler mixin instead."""
V2_ENV = "SGLANG_PROFILE_V2"

logger = logging.getLogger(__name__)


def decode_relative(start_step: object, forward_ct: int) -> object:
    """The absolute step for an encoded relative ``start_step``; anything else unchanged."""
    if isinstance(start_step, int) and RELATIVE_BASE <= start_step < 2 * RELATIVE_BASE:
        return forward_ct + 1 + (start_step - RELATIVE_BASE)
    return start_step


_warmed = False


def warm_profiler(manager: Any) -> float | None:
    """Once per process, before the first profile request is configured: start and stop a CPU
    torch profiler around one tiny op, recording nothing anyone keeps (no trace is exported).

    A fresh server's first window otherwise pays, inside its first recorded batch, what torch does
    the first time a process profiles (measured in docs/performance.md, "What a window costs").
    Skipped while a profile is in progress (a second profiler cannot start), where SGLang replaced
    ``torch.profiler.profile`` (Ascend: torch_npu's profiler), and on any error: it must never break
    a server. Returns the milliseconds it took, or ``None`` when it did not run."""
    global _warmed
    if _warmed or getattr(manager, "profile_in_progress", False):
        return None
    _warmed = True
    began = time.perf_counter()
    collecting = gc.isenabled()
    # torch's profiler objects are reference cycles: left to the collector, this one would be
    # destroyed at some later collection, perhaps inside a live session's stop (where SGLang's
    # scheduler has died of a segfault while collecting garbage). No collection runs during the
    # warm-up, so its objects stay in the young generation, freed right after it (~1.5 ms).
    gc.disable()
    try:
        import torch

        if torch.autograd._profiler_enabled() or not torch.profiler.profile.__module__.startswith("torch."):
            return None
        with (
            torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]),
            torch.profiler.record_function("profwin.warm_up"),
        ):
            torch.zeros(1).add_(1)
        gc.collect(1)
    except Exception as exc:
        logger.warning("profwin: the profiler warm-up failed (the window is unaffected): %s", exc)
        return None
    finally:
        if collecting:
            gc.enable()
    took = (time.perf_counter() - began) * 1e3
    logger.info("profwin: profiler warmed up in %.1f ms, before the first window of this process", took)
    return took


def _profile_v2() -> bool:
    """Whether this scheduler runs SGLang's v2 profiler (read as SGLang reads it)."""
    from sglang.srt.environ import envs

    return bool(envs.SGLANG_PROFILE_V2.get())


def _output(success: bool, message: str) -> Any:
    from sglang.srt.managers.io_struct import ProfileReqOutput

    return ProfileReqOutput(success=success, message=message)


def _batch_tokens(batch: Any, pairs: list[tuple[str, int]] | None = None) -> tuple[list[int], int, int, bool]:
    """What one SGLang batch computes, read before it runs: the response-token index of every
    token it produces, how many requests have prompt tokens in it, how many, and whether a request
    decodes in it (produces a token from a row that does not prefill). ``pairs``, when given,
    receives ``(rid, index)`` for each of those tokens (the session timeline's record).

    A request retracted and recomputed produces its token ``k`` from a prefill row: the batch
    that recomputes it decodes nothing, as one that admits a request.

    A request's sequence after the batch is ``seq_lens_cpu[i]`` long (the prompt plus the tokens
    produced before, plus the one this batch feeds); it produces the token of index
    ``seq_len - len(prompt)`` unless its prefill continues in a later chunk (``chunked_req``).
    In an extend batch (``EXTEND``, and ``MIXED`` under ``--enable-mixed-chunk``) SGLang keeps each
    row's extend length in ``batch.extend_lens``: a row prefills unless it is one of the running
    requests a mixed batch decodes (``batch.decoding_reqs``, each an extend of 1).

    Only an extend batch's ``chunked_req`` is current: a decode batch can be the very object that
    was the first prefill batch (SGLang makes that batch the running batch), which still names the
    request it chunked back then; that request decodes like the others."""
    reqs = batch.reqs
    seq_lens = batch.seq_lens_cpu
    if seq_lens is None or len(reqs) == 0:
        return [], 0, 0, False
    lengths = seq_lens.tolist()
    mode = batch.forward_mode
    extending = bool(mode.is_extend()) if hasattr(mode, "is_extend") else False
    chunked = getattr(batch, "chunked_req", None) if extending else None
    extend_lens = list(getattr(batch, "extend_lens", None) or ()) if extending else []
    decoding = {id(r) for r in getattr(batch, "decoding_reqs", None) or ()} if extending else set()
    produced: list[int] = []
    prefilling = prefill_tokens = 0
    decodes = False
    for i, (req, length) in enumerate(zip(reqs, lengths, strict=False)):
        prefills = i < len(extend_lens) and id(req) not in decoding and extend_lens[i] > 0
        if prefills:
            prefilling += 1
            prefill_tokens += int(extend_lens[i])
        if req is not chunked:
            produced.append(length - len(req.origin_input_ids))
            decodes = decodes or not prefills
            if pairs is not None:
                pairs.append((req.rid, produced[-1]))
    return produced, prefilling, prefill_tokens, decodes


_MAX_ERROR = 2000
_errors: collections.deque[str] = collections.deque(maxlen=8)
_error_count = 0


def _record_error(what: str, exc: BaseException | None = None) -> str:
    """Keep what went wrong inside the server, in its own words, for the client to read
    (``/server_info``: SGLang answers a failed profile request with a bare HTTP 500), and log it.
    Returns the text."""
    global _error_count
    text = what if exc is None else f"{what}: {type(exc).__name__}: {exc}"
    text = " ".join(text.split())[:_MAX_ERROR]
    _errors.append(text)
    _error_count += 1
    logger.warning("profwin: %s", text)
    return text


class _Window:
    """One window profwin armed in one scheduler process: a relative step window under v2 (the
    legacy profiler takes those by the rewritten ``start_step``), or a token window. It runs
    SGLang's own profiler (legacy or v2) from batch to batch, and gives everything back at the end.
    """

    def __init__(self, manager: Any, req: Any, *, v2: bool, tokens: Any, first: int | None, count: int | None) -> None:
        self.manager = manager
        self.req = req
        self.v2 = v2
        self.tokens = tokens
        self.first = first  # the forward_ct a step window opens at
        self.count = count
        self.rule: Any = None
        if tokens is not None:
            from profwin.plugin.engines import TokenRule

            self.rule = TokenRule(tokens)
        self.recording = False
        self.done = False
        self.opened_ct: int | None = None
        self.span: Any = None
        self.original_predicate = manager._profile_batch_predicate

    def arm(self) -> Any:
        """Take the request's settings the way SGLang would and hook the batches; SGLang's answer."""
        req = self.req
        if self.v2:
            pm = self.manager._profile_manager
            if pm.profiler is not None or pm.stage_based_trigger.running_state is not None:
                return _output(False, "Profiling is already in progress. Call /stop_profile first.")
            pm.detailed_annotations = bool(getattr(req, "detailed_annotations", False))
            pm.profiler_kwargs = {
                "activities": req.activities if req.activities is not None else ["CPU", "GPU"],
                "with_stack": req.with_stack,
                "record_shapes": req.record_shapes,
                "output_dir": req.output_dir if req.output_dir is not None else os.getenv("SGLANG_TORCH_PROFILER_DIR", "/tmp"),
                "output_prefix": req.profile_prefix,
                "profile_id": req.profile_id,
            }
        else:
            answer = self.manager._init_profile(
                req.output_dir, None, None, req.activities, req.with_stack, req.record_shapes, False,
                req.profile_id, req.merge_profiles, req.profile_prefix, getattr(req, "detailed_annotations", False),
            )  # fmt: skip
            if not answer.success:
                return answer
        self.manager._profile_batch_predicate = self.on_batch
        return _output(True, "Succeeded")

    def on_batch(self, batch: Any) -> None:
        try:
            self._decide(batch)
        except Exception as exc:  # never let profwin's own code take a scheduler down
            _record_error(f"the window {self.described} stopped early, at forward_ct={_forward_ct(self.manager)}", exc)
            try:
                self.finish()
            except Exception as stop_exc:
                _record_error("stopping the profiler after that error failed", stop_exc)
        self.original_predicate(batch)

    @property
    def described(self) -> str:
        if self.tokens is not None:
            return f"{self.tokens}"
        return f"of {self.count or 'open'} step(s) from forward_ct={self.first}"

    def _decide(self, batch: Any) -> None:
        if self.rule is None:
            forward_ct = self.manager.get_forward_ct()
            if not self.recording and forward_ct == self.first:
                self._start()
            elif self.recording and self.count and forward_ct >= self.first + self.count:  # type: ignore[operator]
                self.finish()
            return
        produced, prefilling, prefill_tokens, decodes = _batch_tokens(batch)
        session_step = self.rule.steps
        decision = self.rule.step(produced, decodes)
        if decision == "close":
            self.finish()
            return
        if decision == "open":
            self._start()
        if decision in ("open", "record"):
            self._annotate(produced, session_step, prefilling, prefill_tokens)

    def _annotate(self, produced: list[int], session_step: int, prefilling: int, prefill_tokens: int) -> None:
        import torch

        from profwin.plugin.engines import StepTokens

        self._end_span()
        held = StepTokens.of(self.rule.recorded - 1, produced, self.tokens, prefilling, prefill_tokens, session_step=session_step)
        name = held.span_name()
        self.span = torch.profiler.record_function(name)
        self.span.__enter__()

    def _end_span(self) -> None:
        if self.span is not None:
            span, self.span = self.span, None
            span.__exit__(None, None, None)

    def _start(self) -> None:
        self.opened_ct = self.manager.get_forward_ct()
        if self.v2:
            self.manager._profile_manager._do_start(stage=None)
        else:
            answer = self.manager._start_profile()
            if answer is not None and not answer.success:
                raise RuntimeError(answer.message)
        self.recording = True

    def finish(self) -> bool:
        """End the window: stop SGLang's profiler if it records (it writes the trace), give the
        batches back. Whether it was recording."""
        was = self.recording
        self._end_span()
        if self.recording:
            self.recording = False
            if self.v2:
                self.manager._profile_manager._do_stop()
                # v2 leaves the finished torch profiler to the collector, whose later run has
                # killed the scheduler in kineto (a segfault, measured on 0.5.23 after a second
                # capture); the classic manager collects right away, as here.
                gc.collect()
            else:
                self.manager._stop_profile()
        self.done = True
        if self.manager._profile_batch_predicate == self.on_batch:
            del self.manager._profile_batch_predicate  # the class's own method again
        return was


_FINISHES = {"FINISH_LENGTH": "length", "FINISH_ABORT": "abort"}  # any other SGLang finish reason is a stop


def _finish_reason(req: Any) -> str:
    """SGLang's finish reason of a finished request as the timeline says it: length, abort or stop."""
    return _FINISHES.get(type(req.finished_reason).__name__, "stop")


def _scheduler_of(manager: Any) -> Any:
    """The scheduler a profiler manager belongs to: SGLang 0.5.23 builds the manager with
    ``get_forward_ct=lambda: self.forward_ct``, whose closure holds the scheduler (the manager
    keeps no reference of its own); ``None`` when it is not there."""
    for cell in getattr(manager.get_forward_ct, "__closure__", None) or ():
        found = cell.cell_contents
        if callable(getattr(found, "run_batch", None)) and callable(getattr(found, "process_batch_result", None)):
            return found
    return None


class _Timeline:
    """The session timeline of one scheduler (``record: [timeline]``), from the start request to
    the stop: the scheduler's ``run_batch`` and ``process_batch_result`` wrapped on the instance
    (given back at the stop), each batch read before it runs (:func:`_batch_tokens`, the token
    windows' reader) and its finished requests after SGLang processed its result."""

    def __init__(self, scheduler: Any, recorder: Any) -> None:
        self.scheduler = scheduler
        self.recorder = recorder
        self.rows: dict[int, int] = {}  # a batch's forward_iter -> its step, until its result is processed
        self.seen: set[str] = set()  # requests the session has held
        self.run_batch = scheduler.run_batch
        self.process_batch_result = scheduler.process_batch_result
        scheduler.run_batch = self.on_run_batch
        scheduler.process_batch_result = self.on_result
        self.failed = False
        self.first_ct: int | None = None  # the batch counter of the session's step 0
        self.window_ct: tuple[int, int | None] | None = None  # a step window: (its first batch's counter, its length)
        self.token_window: _Window | None = None

    def on_run_batch(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.failed:
            try:
                self._begin(batch)
            except Exception as exc:  # the timeline ends; the batch runs as SGLang's
                self._fail(exc)
        return self.run_batch(batch, *args, **kwargs)

    def _begin(self, batch: Any) -> None:
        scheduler, recorder = self.scheduler, self.recorder
        pairs: list[tuple[str, int]] = []
        _, prefilling, prefill_tokens, _ = _batch_tokens(batch, pairs)
        seen = self.seen
        admitted = [r.rid for r in batch.reqs if r.rid not in seen]
        seen.update(admitted)
        running = getattr(scheduler.running_batch, "reqs", None)
        recorder.begin(
            batch=len(batch.reqs), prefilling=prefilling, prefill_tokens=prefill_tokens, produced=pairs, admitted=admitted,
            counter=scheduler.forward_ct + 1, running=None if running is None else len(running),
            waiting=len(scheduler.waiting_queue),
        )  # fmt: skip
        self.rows[scheduler.forward_ct + 1] = recorder.steps - 1  # run_batch counts this batch first thing
        if self.first_ct is None:
            self.first_ct = scheduler.forward_ct + 1
        if len(self.rows) > 64:  # results never processed (a batch dropped): forget the oldest
            self.rows.pop(next(iter(self.rows)))

    def on_result(self, batch: Any, result: Any, *args: Any, **kwargs: Any) -> Any:
        answer = self.process_batch_result(batch, result, *args, **kwargs)
        if not self.failed:
            try:
                step = self.rows.pop(int(getattr(batch, "forward_iter", -1)), None)
                if step is not None:
                    self.recorder.end(step)
                for req in batch.reqs:
                    if req.finished():
                        self.recorder.finish(req.rid, _finish_reason(req))
            except Exception as exc:
                self._fail(exc)
        return answer

    def _fail(self, exc: BaseException) -> None:
        self.failed = True
        _record_error(f"the session timeline stopped early, at forward_ct={self.scheduler.forward_ct}", exc)
        self.detach()

    def detach(self) -> None:
        for name in ("run_batch", "process_batch_result"):
            if self.scheduler.__dict__.get(name) == getattr(self, "on_run_batch" if name == "run_batch" else "on_result"):
                del self.scheduler.__dict__[name]  # the class's own method again

    def window_steps(self) -> Any:
        """The session steps the window's trace holds, as far as this scheduler knows them."""
        from profwin.plugin import Window

        rule = None if self.token_window is None else self.token_window.rule
        if rule is not None:
            return None if rule.opened_at is None else Window(rule.opened_at, rule.opened_at + rule.recorded)
        ran = self.recorder.steps
        if self.window_ct is None or self.first_ct is None:
            return None
        start = self.window_ct[0] - self.first_ct
        end = ran if self.window_ct[1] is None else min(ran, start + self.window_ct[1])
        return Window(start, end) if 0 <= start < end else None

    def stop(self) -> None:
        """The stop: unhook, say where the window sat, write the file; whatever fails is kept for
        the client, never raised."""
        self.detach()
        if self.failed:
            return
        try:
            self.recorder.set_window(self.window_steps())
            self.recorder.close()
        except Exception as exc:
            _record_error("writing the session timeline failed", exc)


def _arm_timeline(manager: Any, req: Any, asked: str | None) -> None:
    """Start recording a session timeline on this scheduler, or keep why not (never raises).
    ``req``: the start request as SGLang (or profwin's window) took it; ``asked``: its window."""
    try:
        scheduler = _scheduler_of(manager)
        if scheduler is None:
            _record_error("no session timeline: this SGLang's scheduler could not be found from its profiler manager")
            return
        import sglang
        from sglang.srt.runtime_context import get_parallel

        from profwin.plugin.engines import TimelineRecorder

        folder = req.output_dir if req.output_dir is not None else os.getenv("SGLANG_TORCH_PROFILER_DIR", "/tmp")
        Path(folder).mkdir(parents=True, exist_ok=True)
        recorder = TimelineRecorder(
            folder, prefix=req.profile_prefix or "sglang", rank=int(get_parallel().tp_rank), engine="sglang",
            engine_version=getattr(sglang, "__version__", None), window=asked,
        )  # fmt: skip
        timeline = _Timeline(scheduler, recorder)
        window = _windows.get(id(manager))
        forward_ct = int(scheduler.forward_ct)
        if window is not None and window.rule is not None:
            timeline.token_window = window
        elif window is not None and window.first is not None:  # a relative window profwin runs (v2)
            timeline.window_ct = (window.first, window.count or None)
        elif req.start_step is None or isinstance(req.start_step, int):  # SGLang's own: now, or the rewritten start
            first = forward_ct + 1 if req.start_step is None else max(int(req.start_step), forward_ct + 1)
            timeline.window_ct = (first, req.num_steps or None)
        _timelines[id(manager)] = timeline
    except Exception as exc:
        _record_error("no session timeline: it could not start", exc)


def _asked(start_step: object, num_steps: object) -> str | None:
    """The window a start request asks for, in words, for the timeline's header (read before the
    plugin rewrites a relative start)."""
    from profwin.plugin.engines import decode_tokens

    count = num_steps if isinstance(num_steps, int) and num_steps > 0 else None
    tokens = decode_tokens(start_step, count or 0)
    if tokens is not None:
        return str(tokens)
    if isinstance(start_step, int) and RELATIVE_BASE <= start_step < 2 * RELATIVE_BASE:
        first = start_step - RELATIVE_BASE
        return f"{first}:{'' if count is None else first + count}"
    if start_step is None:
        return f"0:{'' if count is None else count}"
    return None


_timelines: dict[int, _Timeline] = {}  # manager id -> its session timeline
_windows: dict[int, _Window] = {}  # manager id -> its armed window


def _forward_ct(manager: Any) -> object:
    try:
        return manager.get_forward_ct()
    except Exception:
        return "?"


_NOT_RUNNING = "Profiling is not in progress. Call /start_profile first."
_PASS = object()  # _decide's answer: let SGLang's own handler take the (maybe rewritten) request


def _handle(original: Any, manager: Any, req: Any) -> Any:
    """``SchedulerProfilerManager._profile`` with profwin's windows, the session timeline and the
    v2 guard. Whatever goes wrong in profwin's own code is answered as a refusal (and kept for the
    client): a profile request never raises into the scheduler because of profwin.

    A start request whose ``start_step`` carries the timeline's flag (:func:`profwin.plugin.engines.decode_timeline`)
    is taken without it, and once SGLang (or profwin's window) accepted it, the scheduler's
    timeline starts; a stop request ends it (and writes it) before anything else."""
    timeline = False
    asked: str | None = None
    try:
        timeline = _take_timeline_flag(manager, req)
        if timeline:
            asked = _asked(req.start_step, req.num_steps)
        answer = _decide(manager, req)
    except Exception as exc:
        return _output(False, _record_error("profwin refused the profile request after an error of its own", exc))
    if answer is _PASS:
        answer = original(manager, req)
    if timeline and getattr(answer, "success", False):
        _arm_timeline(manager, req, asked)
    return answer


def _take_timeline_flag(manager: Any, req: Any) -> bool:
    """A stop ends the scheduler's timeline (written now); a start's ``start_step`` loses the
    timeline's flag (0, profwin's "now", is SGLang's ``None``). Whether the start asks for one."""
    from sglang.srt.managers.io_struct import ProfileReqType

    kind = getattr(req, "req_type", None) or getattr(req, "type", None)
    if kind != ProfileReqType.START_PROFILE:
        running = _timelines.pop(id(manager), None)
        if running is not None:
            running.stop()
        return False
    from profwin.plugin.engines import decode_timeline

    start, flagged = decode_timeline(req.start_step)
    if not flagged:
        return False
    req.start_step = start or None
    return id(manager) not in _timelines  # a second start while one runs is SGLang's to refuse


def _decide(manager: Any, req: Any) -> Any:
    """profwin's answer to a profile request, or :data:`_PASS`."""
    from sglang.srt.managers.io_struct import ProfileReqType

    v2 = _profile_v2()
    kind = getattr(req, "req_type", None) or getattr(req, "type", None)  # 0.5.16+ / before (msgspec)
    window = _windows.get(id(manager))
    if window is not None and window.done:
        _windows.pop(id(manager), None)
        window = None
    if kind != ProfileReqType.START_PROFILE:
        if window is not None:
            _windows.pop(id(manager), None)
            if window.finish():
                return _output(True, "Succeeded.")
            return _output(False, _NOT_RUNNING)
        if v2:  # SGLang's v2 manual stop raises NotImplementedError in the scheduler
            if manager._profile_manager.stage_based_trigger.running_state is None:
                # Nothing runs (profwin's own stop after a window that ended by itself, say): the
                # classic profiler's answer, logged with why v2 could not be asked, not an error.
                logger.warning("profwin: a stop with nothing recording: %s=1's profiler has no manual stop", V2_ENV)
                return _output(False, _NOT_RUNNING)
            return _refuse(f"Profiling is not in progress: {V2_ENV}=1's profiler has no manual stop (it stops itself)")
        return _PASS
    if window is not None:
        return _output(False, "Profiling is already in progress. Call /stop_profile first.")
    warm_profiler(manager)
    from profwin.plugin.engines import decode_tokens, token_claimed

    forward_ct = manager.get_forward_ct()
    start_step = req.start_step
    tokens = decode_tokens(start_step, req.num_steps or 0)
    if tokens is None and token_claimed(start_step):
        return _refuse(f"start_step {start_step} with num_steps {req.num_steps!r} is no token window profwin makes")
    relative = isinstance(start_step, int) and RELATIVE_BASE <= start_step < 2 * RELATIVE_BASE
    if tokens is not None or (relative and v2):
        if req.profile_by_stage or req.merge_profiles:
            return _refuse("profwin windows take neither profile_by_stage nor merge_profiles")
        first = decode_relative(start_step, forward_ct) if relative else None
        window = _Window(manager, req, v2=v2, tokens=tokens, first=first, count=req.num_steps)  # type: ignore[arg-type]
        answer = window.arm()
        if answer.success:
            _windows[id(manager)] = window
            logger.info("profwin: %s window armed at forward_ct=%d", "token" if tokens else "relative", forward_ct)
        return answer
    if relative:
        req.start_step = decode_relative(start_step, forward_ct)
        logger.info("profwin: profile request at forward_ct=%d starts at step %s", forward_ct, req.start_step)
    if v2:
        refusal = _v2_refusal(req, manager)
        if refusal:
            return _refuse(refusal)
    return _PASS


def _refuse(message: str) -> Any:
    """Answer a request the v2 profiler would die of, and keep why (the HTTP reply is SGLang's
    bare 500: the client reads it from ``/server_info``, the operator from the log)."""
    return _output(False, _record_error(f"refused a profile request: {message}"))


def _v2_refusal(req: Any, manager: Any) -> str:
    """Why SGLang's v2 profiler would take the scheduler down on ``req`` (its asserts), or ``""``."""
    if req.start_step:
        return f"{V2_ENV}=1's profiler takes no start_step (relative windows need profwin's request)"
    if not req.profile_by_stage:
        return f"{V2_ENV}=1's profiler records only by stage: send profile_by_stage with num_steps"
    if req.merge_profiles:
        return f"{V2_ENV}=1's profiler cannot merge profiles"
    if not req.num_steps:
        return f"{V2_ENV}=1's profiler needs num_steps (it has no manual stop)"
    trigger = manager._profile_manager.stage_based_trigger
    if trigger.running_state is not None:
        return "Profiling is already in progress; the v2 profiler stops by itself after its steps"
    return ""


def _hooks_applied() -> bool:
    """Whether SGLang really applied the hook on ``_profile``: ``HookRegistry.apply_hooks`` logs
    and skips a target it cannot patch, and a server must not report a capability it lacks."""
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry
    except ImportError:
        return False
    return _PROFILE in getattr(HookRegistry, "_patched", ())


def _report_capability(result: Any, controller: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        state = getattr(result, "internal_state", None)
        if isinstance(state, dict) and _hooks_applied():
            state[STATE_KEY] = {
                "protocol": PROTOCOL,
                "relative_base": RELATIVE_BASE,
                "token_windows": TOKEN_WINDOWS,
                "timeline": TIMELINE,
                "profiler": "v2" if _profile_v2() else "v1",
                "forward_ct": int(controller.scheduler.forward_ct),
                "error_count": _error_count,
                "errors": list(_errors),
            }
    except Exception as exc:  # /server_info answers all the same, without the capability
        logger.warning("profwin: could not report the plugin's state: %s", exc)
    return result


def _module_of(target: str) -> str:
    """``a.b.c.Class.method`` -> ``a.b.c``: the module a hook target lives in."""
    return target.rsplit(".", 2)[0]


_NEEDED_MODULES = ("sglang.srt.plugins.hook_registry", _module_of(_PROFILE), _module_of(_INTERNAL_STATE))


def _missing_module(package_dir: Path, module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return not ((package_dir / relative).with_suffix(".py").is_file() or (package_dir / relative / "__init__.py").is_file())


def unavailable_here() -> str | None:
    """Why SGLang servers started from this Python environment would not run the hooks, or ``None``
    when :func:`register` can install them here.

    Checked without importing SGLang (its import takes seconds and may need a GPU): SGLang is
    installed; the modules :func:`register` imports exist in it; this package's
    ``sglang.srt.plugins`` entry point is installed; ``SGLANG_PLUGINS``, when set, names it.
    """
    spec = importlib.util.find_spec("sglang")
    if spec is None or spec.origin is None:
        return "SGLang is not installed in this environment"
    from profwin.plugin.engines import engine_plugin_missing, installed_version  # the client side: profwin is here

    version = installed_version("sglang", ("sglang",)) or "(version unknown)"
    package_dir = Path(spec.origin).parent
    missing = [module for module in _NEEDED_MODULES if _missing_module(package_dir, module)]
    if missing:
        return f"SGLang {version} has no {', '.join(missing)} (the server plugin's hooks need SGLang >= {FIRST_VERSION})"
    return engine_plugin_missing(_DISTRIBUTION, _ENTRY_GROUP, "SGLANG_PLUGINS", empty_allows_all=True)


def register() -> None:
    """Entry point of group ``sglang.srt.plugins``: register both hooks, or none."""
    try:
        from sglang.srt.managers.scheduler_components.internal_state import SchedulerInternalStateController
        from sglang.srt.managers.scheduler_components.profiler_manager import SchedulerProfilerManager
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
    except ImportError as exc:  # another SGLang layout: stay out of the way, clients fall back
        logger.warning("profwin: relative profiling windows unavailable on this SGLang: %s", exc)
        return
    needed = ("_profile", "_init_profile", "_start_profile", "_stop_profile", "_profile_batch_predicate")
    if not (
        all(hasattr(SchedulerProfilerManager, n) for n in needed)
        and hasattr(SchedulerInternalStateController, "get_internal_state")
    ):
        logger.warning("profwin: relative profiling windows unavailable: SGLang's profiler manager has changed")
        return
    HookRegistry.register(_INTERNAL_STATE, _report_capability, HookType.AFTER)
    HookRegistry.register(_PROFILE, _handle, HookType.AROUND)
