"""The vLLM-side half of profwin-vllm: token windows decided inside the engine.

vLLM loads *general plugins* (entry-point group ``vllm.general_plugins``) in its API-server,
engine and worker processes; installing profwin-vllm beside vLLM registers :func:`register`
there. It changes nothing per step. It hooks two things once:

* ``WorkerBase.__init__``: each new worker gets a ``profile`` wrapper (called only on
  ``start_profile``/``stop_profile``) and a ``profwin_report`` method that
  ``collective_rpc("profwin_report")`` calls to learn that this worker honours token windows.
* the ``/start_profile`` router of ``vllm serve`` (when the server has a profiler): one more
  route, ``GET /profwin``, which asks every worker for that report.

A token window reaches the worker as an encoded ``delay_iterations``/``max_iterations``
(:func:`profwin.plugin.engines.encode_tokens`): per session on vLLM >= 0.32, or in the launch
``profiler_config`` (vLLM < 0.32, and callers that start without bounds, such as verl). The wrapper takes it out of vLLM's hands and, for that session
only, wraps the worker's ``execute_model``: before each step it reads the step's
``SchedulerOutput`` (which requests run, how many tokens each computes, each prompt's length),
asks :class:`profwin.plugin.engines.TokenRule` whether to start, keep or stop recording, and starts and
stops vLLM's own profiler (``Worker.profile``) accordingly, each recorded step wrapped in a
``profwin.tokens`` annotation. The wrapper removes itself when the window closes. A session
with an ordinary window passes through untouched.

The session timeline (``record: [timeline]``, :mod:`profwin.runtime.timeline_record`) travels as profwin's
flag on the same ``delay_iterations`` (:func:`profwin.plugin.engines.decode_timeline`): the wrapper takes it
off (a step window's bounds go to vLLM as they were, and vLLM records that window itself), keeps
``execute_model`` wrapped from the start to the stop, and before each step gives the step's
numbers (the same reader, :func:`produced_tokens`, with each token's request) and around it its
time to a :class:`profwin.plugin.engines.TimelineRecorder`, which writes the file into the worker's trace
folder at the stop. Workers report ``timeline`` (:data:`TIMELINE`) so that clients send the flag
only where it is understood.

Nothing here is imported by profwin itself; this module imports vLLM and torch only inside the
engine, and never lets an error of its own reach vLLM: a hook that cannot install is logged and
the worker does not report token windows, so clients fall back to step windows.
"""

from __future__ import annotations

import collections
import functools
import logging
import sys
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "PROTOCOL",
    "STATE_ROUTE",
    "TIMELINE",
    "highest_token",
    "produced_tokens",
    "prompt_length",
    "register",
    "report",
    "unavailable_here",
]

PROTOCOL = 1
"""Version of what the hooks do; clients check it in the workers' reports."""

TIMELINE = 1
"""Version of the session timeline the hooks record (``record: [timeline]``), reported as
``timeline`` in each worker's report: clients send the timeline flag only to workers that say it."""

STATE_ROUTE = "/profwin"
"""The route ``vllm serve`` answers with every worker's :func:`report` when the plugin runs."""

_MARK = "_profwin_hooked"
_DISTRIBUTION = "profwin-vllm"
_ENTRY_GROUP = "vllm.general_plugins"
logger = logging.getLogger(__name__)


def unavailable_here() -> str | None:
    """Why a vLLM engine started from this Python environment would not run the token-window
    hooks, or ``None`` when it would: for callers that decide before the engine runs (verl's
    builders, which launch vLLM from their own environment). Never imports vLLM."""
    from profwin.plugin.engines import EngineVersion, engine_plugin_missing, installed_version
    from profwin_vllm.versions import DISTRIBUTIONS, TOKEN_WINDOWS_FROM

    found = installed_version("vllm", DISTRIBUTIONS)
    if found is None:
        return "vLLM is not installed in this environment"
    if EngineVersion.parse(found) < TOKEN_WINDOWS_FROM:
        return f"vLLM {found} is older than {TOKEN_WINDOWS_FROM}, the oldest the token-window hooks are proven on"
    return engine_plugin_missing(_DISTRIBUTION, _ENTRY_GROUP, "VLLM_PLUGINS", empty_allows_all=False)


def produced_tokens(
    scheduler_output: Any, prompt_length: Callable[[str], int | None], pairs: list[tuple[str, int]] | None = None
) -> tuple[list[int], int, int]:
    """What one step computes, from vLLM's ``SchedulerOutput``: the response-token index of every
    token it produces, how many requests have prompt tokens in it, and how many tokens those
    requests process. ``pairs``, when given, receives ``(request id, index)`` for each of those
    tokens (the session timeline's per-request record).

    A request with ``k`` tokens produced before the step (``num_output_tokens``) produces token
    ``k`` in a step that brings its computed tokens up to its prompt plus those ``k``: the last
    chunk of its prefill, or a decode step. ``prompt_length(req_id)`` gives a request's prompt
    length when the step does not carry it (requests scheduled before: :func:`prompt_length`).
    A request the step sends whole (``scheduled_new_reqs``) has produced the tokens it carries
    past its prompt (:func:`_sent_whole`).

    Requests with prompt tokens are counted as vLLM's own step annotation counts them
    (``execute_context_…``, ``compute_iteration_details``), so that the two annotations of a step
    agree: a request sent whole, or one that has produced nothing yet. A preempted request that
    the V1 runner recomputes among the running ones is not one of them there, as in vLLM's.
    """
    known: dict[str, tuple[int, int, int | None, bool]] = {}  # req_id -> (computed, produced so far, prompt, sent whole)
    for new in scheduler_output.scheduled_new_reqs:
        prompt, outputs = _sent_whole(new)
        known[new.req_id] = (new.num_computed_tokens, outputs, prompt, True)
    cached = scheduler_output.scheduled_cached_reqs
    for req_id, computed, outputs in zip(cached.req_ids, cached.num_computed_tokens, cached.num_output_tokens, strict=False):
        known[req_id] = (computed, outputs, None, False)
    produced: list[int] = []
    prefilling = prefill_tokens = 0
    for req_id, scheduled in scheduler_output.num_scheduled_tokens.items():
        entry = known.get(req_id)
        if entry is None:
            continue
        computed, outputs, prompt, whole = entry
        if whole or outputs == 0:
            prefilling += 1
            prefill_tokens += scheduled
        if prompt is None:
            prompt = prompt_length(req_id)
            if prompt is None:
                continue
        if computed + scheduled >= prompt + outputs:
            produced.append(outputs)
            if pairs is not None:
                pairs.append((req_id, outputs))
    return produced, prefilling, prefill_tokens


def highest_token(scheduler_output: Any) -> int:
    """The highest response-token index a step can produce (-1: none), in the time of one
    ``max()`` and a look at the requests it sends whole: a request produces the token its outputs
    so far number (a new one token 0). Until a window nears, this alone tells that no token of the
    step is in it."""
    outputs = scheduler_output.scheduled_cached_reqs.num_output_tokens
    highest = max(outputs) if outputs else -1
    for new in scheduler_output.scheduled_new_reqs:
        highest = max(highest, _sent_whole(new)[1])
    return highest


def _sent_whole(new: Any) -> tuple[int | None, int]:
    """A request the step sends whole (vLLM's ``NewRequestData``): its prompt length, and how
    many tokens it has produced. A new request has produced none. Model Runner V2 (vLLM's runner
    on CUDA from 0.32 where Triton is, its only runner from 0.34) also sends a preempted request
    whole when it resumes, its prompt and its outputs so far in ``prefill_token_ids``; the V1
    runner gets it among the cached requests, with ``num_output_tokens``."""
    tokens = new.prompt_token_ids
    if tokens is not None:
        prompt: int | None = len(tokens)
    else:
        embeds = getattr(new, "prompt_embeds", None)
        prompt = None if embeds is None else int(embeds.shape[0])
    prefill = getattr(new, "prefill_token_ids", None)  # None for the V1 runner; absent in older vLLMs
    outputs = len(prefill) - prompt if prefill is not None and prompt is not None else 0
    return prompt, max(outputs, 0)


def prompt_length(model_runner: Any, req_id: str) -> int | None:
    """The prompt length of a request ``model_runner`` holds from an earlier step: the V1 runner's
    ``requests[req_id].num_prompt_tokens``, or Model Runner V2's ``req_states`` (its row of
    ``prompt_len``); ``None`` for a request it does not hold."""
    held = getattr(model_runner, "requests", None)
    if isinstance(held, dict):
        state = held.get(req_id)
        return None if state is None else getattr(state, "num_prompt_tokens", None)
    states = getattr(model_runner, "req_states", None)
    index = getattr(states, "req_id_to_index", {}).get(req_id)
    return None if index is None else int(states.prompt_len.np[index])  # type: ignore[union-attr]


class _Session:
    """One session on one worker that profwin decides step by step: a token window (the rule, the
    prefix), a session timeline, or both; the hook on ``execute_model``."""

    def __init__(
        self,
        worker: Any,
        profile: Callable[..., Any],
        window: Any,
        prefix: str | None,
        per_session: bool,
        record: Callable[[str, BaseException], None],
        timeline: Any = None,
        steps: Any = None,
    ) -> None:
        from profwin.plugin.engines import TokenRule

        self.worker = worker
        self.profile = profile
        self.window = window
        self.prefix = prefix
        self.per_session = per_session
        self.record = record
        self.rule = None if window is None else TokenRule(window)
        self.timeline = timeline
        self.steps = steps  # a step window vLLM's own profiler records (for the timeline's header)
        self.execute = worker.execute_model
        worker.execute_model = self.execute_model

    def prompt_length(self, req_id: str) -> int | None:
        return prompt_length(getattr(self.worker, "model_runner", None), req_id)

    def execute_model(self, scheduler_output: Any, *args: Any, **kwargs: Any) -> Any:
        span = None
        try:
            span = self._decide(scheduler_output)
        except Exception as exc:  # profwin's own error: the window ends, the step runs as vLLM's
            self._failed(exc)
        timeline = self.timeline
        try:
            if span is None:
                return self.execute(scheduler_output, *args, **kwargs)
            import torch

            with torch.profiler.record_function(span):
                return self.execute(scheduler_output, *args, **kwargs)
        finally:
            if timeline is not None:
                timeline.end()

    def _failed(self, exc: BaseException) -> None:
        """After an error of profwin's own in the token window's part of a step: the window stops
        (its trace is written), the step runs as vLLM's."""
        self.record(f"the token window {self.window} stopped early on rank {getattr(self.worker, 'rank', '?')}", exc)
        self._abandon()

    def _decide(self, scheduler_output: Any) -> str | None:
        """Before a step: the timeline's row, the rule's decision carried out; the step's
        annotation, or ``None``."""
        rule, timeline = self.rule, self.timeline
        produced: list[int] | None = None
        prefilling = prefill_tokens = 0
        if timeline is not None:
            try:
                pairs: list[tuple[str, int]] = []
                produced, prefilling, prefill_tokens = produced_tokens(scheduler_output, self.prompt_length, pairs)
                self._timeline_row(timeline, scheduler_output, pairs, prefilling, prefill_tokens)
            except Exception as exc:  # the timeline is dropped (nothing of it written); the window goes on
                self.record(f"the session timeline stopped early on rank {getattr(self.worker, 'rank', '?')}", exc)
                self.timeline, produced = None, None
                if rule is None or rule.state == "closed":
                    self.detach()
        if rule is None or rule.state == "closed":
            return None
        if produced is None:
            if rule.skip_below(highest_token(scheduler_output)):
                return None
            produced, prefilling, prefill_tokens = produced_tokens(scheduler_output, self.prompt_length)
        session_step = rule.steps
        decision = rule.step(produced)
        if decision == "skip":
            return None
        if decision == "close":
            self.profile(False)
            if self.timeline is None:
                self.detach()
            return None
        if decision == "open":
            self.start_recording()
        from profwin.plugin.engines import StepTokens

        held = StepTokens.of(rule.recorded - 1, produced, self.window, prefilling, prefill_tokens, session_step=session_step)
        return held.span_name()

    @staticmethod
    def _timeline_row(timeline: Any, scheduler_output: Any, pairs: list[tuple[str, int]], prefilling: int, tokens: int) -> None:
        for req_id in scheduler_output.finished_req_ids:
            timeline.finish(req_id)
        new = scheduler_output.scheduled_new_reqs
        timeline.begin(
            batch=len(scheduler_output.num_scheduled_tokens), prefilling=prefilling, prefill_tokens=tokens, produced=pairs,
            admitted=[r.req_id for r in new],
        )  # fmt: skip
        for r in new:
            timeline.limit(r.req_id, getattr(getattr(r, "sampling_params", None), "max_tokens", None))

    def _abandon(self) -> None:
        """After an error of profwin's own: stop a recording (its trace is written), give the
        worker back; whatever fails here too is kept, never raised."""
        assert self.rule is not None
        try:
            if self.rule.state == "recording":
                self.rule.state = "closed"
                self.profile(False)
        except Exception as exc:
            self.record("stopping vLLM's profiler after that error failed", exc)
        finally:
            self.rule.state = "closed"
            if self.timeline is None:
                self.detach()

    def start_recording(self) -> None:
        if self.per_session:
            self.profile(True, self.prefix, delay_iterations=0, max_iterations=0)
            return
        # vLLM < 0.32 takes no bounds per session, and its profiler holds the launch config's
        # encoded delay: it is told to start now for this session (and restored at the stop).
        profiler = getattr(self.worker, "profiler", None)
        if profiler is not None:
            profiler._delay_iters, profiler._max_iters = 0, 0
        self.profile(True, self.prefix)

    def stop(self) -> bool:
        """The session's stop: end a recording still open, write the timeline; whether the token
        window ever opened."""
        rule = self.rule
        if rule is not None and rule.state == "recording":
            rule.state = "closed"
            self.profile(False)
        self.detach()
        timeline, self.timeline = self.timeline, None
        if timeline is not None:
            try:
                self._close_timeline(timeline)
            except Exception as exc:  # kept for the client; the stop goes on
                self.record(f"writing the session timeline failed on rank {getattr(self.worker, 'rank', '?')}", exc)
        return rule is not None and rule.opened_at is not None

    def _close_timeline(self, timeline: Any) -> None:
        from profwin.plugin import Window

        rule, ran = self.rule, timeline.steps
        if rule is not None and rule.opened_at is not None:
            timeline.set_window(Window(rule.opened_at, rule.opened_at + rule.recorded))
        elif rule is None and self.steps is not None and self.steps.start < ran:
            end = ran if self.steps.end is None else min(self.steps.end, ran)
            timeline.set_window(Window(self.steps.start, end))
        timeline.close()

    def detach(self) -> None:
        """Give ``execute_model`` back and restore vLLM's launch bounds: no cost after the window."""
        if self.worker.execute_model == self.execute_model:
            self.worker.execute_model = self.execute
        profiler = getattr(self.worker, "profiler", None)
        config = getattr(self.worker, "profiler_config", None)
        if not self.per_session and profiler is not None and config is not None:
            profiler._delay_iters, profiler._max_iters = config.delay_iterations, config.max_iterations


_MAX_ERRORS = 8
_MAX_ERROR = 2000


class _Hooks:
    """What :func:`_install` adds to one worker."""

    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.profile = worker.profile
        self.session: _Session | None = None
        # vLLM >= 0.32 takes per-session bounds: recording then starts with delay and max 0.
        self.per_session = "delay_iterations" in _parameters(self.profile)
        self.errors: collections.deque[str] = collections.deque(maxlen=_MAX_ERRORS)
        self.error_count = 0

    def record(self, what: str, exc: BaseException | None = None) -> None:
        """Keep what went wrong in profwin's own code here, in its words, for the client (the
        workers' reports) and the log: vLLM's ``profile`` returns nothing a client sees."""
        text = what if exc is None else f"{what}: {type(exc).__name__}: {exc}"
        text = " ".join(text.split())[:_MAX_ERROR]
        self.errors.append(text)
        self.error_count += 1
        logger.warning("profwin: %s", text)

    def __call__(self, is_start: bool = True, profile_prefix: str | None = None, **kwargs: Any) -> Any:
        try:
            passed = self._decide(is_start, profile_prefix, kwargs)
        except Exception as exc:  # profwin's own error: refused (kept for the client), never raised into vLLM
            self.record("profwin refused the profile call after an error of its own", exc)
            return None
        if not passed:
            return None
        try:
            return self.profile(is_start, profile_prefix, **kwargs)
        except BaseException:
            if is_start and self.session is not None:  # vLLM refused the start: no timeline either
                session, self.session = self.session, None
                session.timeline = None
                session.detach()
            raise

    def _decide(self, is_start: bool, profile_prefix: str | None, kwargs: dict[str, Any]) -> bool:
        """profwin's part of a profile call; ``True``: vLLM's own ``profile`` takes it (its
        bounds without profwin's timeline flag)."""
        from profwin.plugin.engines import decode_timeline, decode_tokens, token_claimed

        if not is_start:
            if self.session is None:
                return True
            session, self.session = self.session, None
            session.stop()  # vLLM's profiler ran only if the token window opened, and is stopped now
            return session.rule is None  # a step window's recording is vLLM's own: its stop too
        per_call = "delay_iterations" in kwargs or "max_iterations" in kwargs
        if per_call:
            delay, limit = kwargs.get("delay_iterations"), kwargs.get("max_iterations")
        else:  # a start without bounds (vLLM < 0.32, verl's start_profile()): the launch config's
            config = getattr(self.worker, "profiler_config", None)
            delay, limit = (None, None) if config is None else (config.delay_iterations, config.max_iterations)
        delay, timeline = decode_timeline(delay)
        window = decode_tokens(delay, limit)
        if window is None:
            if token_claimed(delay):
                self.record(
                    f"refused a profile call: delay_iterations {delay} with max_iterations {limit!r} is no token window profwin makes"
                )
                return False
            if not timeline:
                return True
            if self.session is not None:  # vLLM's frontends refuse a second start before a stop
                return False
            # A step window, vLLM's own, with the session timeline: vLLM gets its bounds back.
            if per_call:
                kwargs["delay_iterations"] = delay
            else:
                profiler = getattr(self.worker, "profiler", None)
                if profiler is not None:
                    profiler._delay_iters = delay
            steps = _recorded_steps(delay, limit)
            recorder = self._recorder(profile_prefix, steps)
            self.session = _Session(
                self.worker, self.profile, None, profile_prefix, self.per_session, self.record, recorder, steps
            )
            return True
        if self.session is not None:  # vLLM's frontends refuse a second start before a stop
            return False
        recorder = self._recorder(profile_prefix, window) if timeline else None
        self.session = _Session(self.worker, self.profile, window, profile_prefix, self.per_session, self.record, recorder)
        logger.info("profwin: token window %s armed on rank %s", window, getattr(self.worker, "rank", "?"))
        return False

    def _recorder(self, prefix: str | None, window: Any) -> Any:
        """The session timeline's recorder, writing beside the traces; ``None`` (and why, kept for
        the client) when the worker has no folder for them."""
        from profwin.plugin.engines import TimelineRecorder
        from profwin_vllm.folders import folder_field

        config = getattr(self.worker, "profiler_config", None)
        folder = getattr(config, folder_field(getattr(config, "profiler", "torch")), None)
        if not folder or "://" in str(folder):
            self.record(f"no session timeline: this worker's profiler writes no local folder ({folder!r})")
            return None
        rank = getattr(self.worker, "rank", 0)
        vllm = sys.modules.get("vllm")
        return TimelineRecorder(
            str(folder), prefix=prefix or "vllm", rank=rank if isinstance(rank, int) else 0, engine="vllm",
            engine_version=getattr(vllm, "__version__", None), window=None if window is None else str(window),
        )  # fmt: skip


def _recorded_steps(delay: object, limit: object) -> Any:
    """The session steps vLLM's own profiler records for ``delay_iterations``/``max_iterations``
    (vLLM's off-by-one: step ``delay - 1`` first, ``limit`` of them, 0 for no limit; delay 0
    records as 1 does: plan.py's ``launched_window``, which this module sits below), or ``None``
    for values that are not counts."""
    if type(delay) is not int or type(limit) is not int or delay < 0 or limit < 0:
        return None
    from profwin.plugin import Window

    start = max(delay, 1) - 1
    return Window(start, None if limit == 0 else start + limit)


def _parameters(fn: Callable[..., Any]) -> Iterable[str]:
    import inspect

    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()


def report(worker: Any) -> dict[str, Any]:
    """What one worker says of the plugin (``collective_rpc("profwin_report")``)."""
    from profwin_vllm.folders import folder_field

    worker = getattr(worker, "worker", worker)
    hooks = getattr(worker, _MARK, None)
    config = getattr(worker, "profiler_config", None) or getattr(getattr(worker, "vllm_config", None), "profiler_config", None)
    bounds = [getattr(config, "delay_iterations", None), getattr(config, "max_iterations", None)]
    folder = getattr(config, folder_field(getattr(config, "profiler", None)), None)
    return {
        "protocol": PROTOCOL,
        "token_windows": isinstance(hooks, _Hooks),
        "timeline": TIMELINE if isinstance(hooks, _Hooks) else None,
        "per_session": bool(getattr(hooks, "per_session", False)),
        "rank": getattr(worker, "rank", None),
        "error_count": getattr(hooks, "error_count", 0),
        "errors": list(getattr(hooks, "errors", ())),
        # The window the worker's profiler was launched with: what a vLLM < 0.32 records in every
        # session, which a client cannot read over HTTP otherwise.
        "bounds": bounds if all(type(b) is int for b in bounds) else None,
        # Where its traces go: fixed at launch, and what a client must list (profwin_vllm.folders).
        "folder": folder if isinstance(folder, str) and folder else None,
    }


def _install(worker: Any) -> None:
    if getattr(worker, _MARK, None) is not None:
        return
    if not callable(getattr(worker, "profile", None)) or not callable(getattr(worker, "execute_model", None)):
        logger.warning("profwin: token windows unavailable: this vLLM worker has no profile/execute_model")
        return
    hooks = _Hooks(worker)
    functools.update_wrapper(hooks, hooks.profile)
    worker.profile = hooks
    worker.profwin_report = functools.partial(report, worker)
    setattr(worker, _MARK, hooks)


def _hook_workers() -> None:
    # WorkerBase.__init__, not WorkerWrapperBase.init_worker: a worker process loads the general
    # plugins from inside init_worker itself, too late to hook that call, before the worker exists.
    from vllm.v1.worker.worker_base import WorkerBase

    original = WorkerBase.__init__
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        try:
            _install(self)
        except Exception as exc:  # never break a worker's start
            logger.warning("profwin: token windows unavailable on this worker: %s", exc)

    setattr(init, _MARK, True)
    WorkerBase.__init__ = init  # type: ignore[method-assign]


def _hook_server() -> None:
    """``GET /profwin`` beside ``/start_profile`` on ``vllm serve``: every worker's report."""
    from fastapi import Request
    from fastapi.responses import JSONResponse
    from vllm.entrypoints.serve.profile import api_router

    if any(getattr(route, "path", None) == STATE_ROUTE for route in api_router.router.routes):
        return

    async def profwin_state(raw_request: Request) -> JSONResponse:
        workers = await raw_request.app.state.engine_client.collective_rpc("profwin_report")
        return JSONResponse({"profwin_vllm": {"protocol": PROTOCOL, "workers": list(workers)}})

    # FastAPI reads the annotations to inject the request; this module's are strings (PEP 563)
    # naming names local to this function, so it is given the objects.
    profwin_state.__annotations__ = {"raw_request": Request, "return": JSONResponse}
    api_router.router.add_api_route(STATE_ROUTE, profwin_state, methods=["GET"])


_SERVER_MODULES = ("vllm.entrypoints.launchers.api_server.entry", "vllm.entrypoints.openai.api_server")


def register() -> None:
    """Entry point of group ``vllm.general_plugins``: install the hooks, or log why not."""
    try:
        _hook_workers()
    except Exception as exc:  # another vLLM layout: stay out of the way, clients fall back
        logger.warning("profwin: token windows unavailable on this vLLM: %s", exc)
        return
    if any(name in sys.modules for name in _SERVER_MODULES):
        try:
            _hook_server()
        except Exception as exc:
            logger.warning("profwin: GET %s unavailable on this server: %s", STATE_ROUTE, exc)
