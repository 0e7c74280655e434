"""How a session-relative window becomes SGLang's ``start_step``/``num_steps`` (pure functions).

SGLang counts batches per scheduler from launch (``forward_ct``) and compares ``start_step`` with
that absolute count. profwin's window counts from the session start. Three exact ways exist:

``relative``
    The server runs the profwin-sglang server plugin (:mod:`profwin_sglang.server_plugin`), which
    rewrites an encoded ``start_step = RELATIVE_BASE + start`` to ``forward_ct + 1 + start`` on the
    scheduler thread when the request arrives. Records exactly ``[start, end)``.
``immediate``
    ``start == 0`` and no ``start_step``: SGLang starts at the next batch and records ``num_steps``
    batches (0.5.23; one fewer before PR #30215). Exact without any plugin.
``trim``
    The fallback: record ``[0, end)`` in immediate mode, then cut the first ``start`` batches out of
    the trace after the stop (:func:`profwin_sglang.trim_in_place`). The steps are right, but the
    server records ``start`` extra batches, and a trace the client cannot read stays untrimmed.

``by_stage`` is SGLang's own mode: the first ``num_steps`` prefill batches and the first
``num_steps`` decode batches, in two files; it has no start offset.

``tokens``
    A window in tokens, on a server whose plugin decides token windows: ``start_step =
    TOKEN_BASE + start`` and ``num_steps = end - start`` (:func:`profwin.plugin.engines.encode_tokens`);
    the plugin records the steps profwin's token rule chooses. Without the plugin a token window
    is planned as the same numbers in steps, with a warning.
No plugin on a server known to run SGLang's v2 profiler (``SGLANG_PROFILE_V2=1``): refused
before anything is sent (:func:`v2_refusal`). The v2 profiler asserts ``start_step is None`` and
``profile_by_stage`` and raises on a manual stop, each taking the scheduler down, and no harmless
request tells it apart from the classic one; so a server that cannot say which profiler it runs
is planned for SGLang's default (v1), and the user is told so (:data:`ASSUMED_V1`).
"""

from __future__ import annotations

from typing import Literal

from attrs import evolve, frozen

from profwin.plugin import ConfigError, Window, checked, shown
from profwin.plugin.engines import encode_tokens
from profwin_sglang.options import START_MODES
from profwin_sglang.server_plugin import RELATIVE_BASE
from profwin_sglang.versions import Features

__all__ = ["ASSUMED_V1", "Plan", "plan_window", "trim_records", "v2_refusal"]

Mode = Literal["relative", "immediate", "trim", "by_stage", "tokens"]
Profiler = Literal["v1", "v2"]
V2_ENV = "SGLANG_PROFILE_V2"


@frozen(kw_only=True)
class Plan:
    """What one start request asks for and what the trace will hold.

    Attributes:
        mode: how the window is realised (module docstring).
        start_step: the ``start_step`` field to send (``None``: immediate).
        num_steps: the ``num_steps`` field (``None``: until ``/stop_profile``).
        window: the session steps the kept trace covers when everything ran (a token window in
            ``tokens`` mode).
        recorded: the session steps the server records (wider than ``window`` in ``trim``;
            ``None`` in ``tokens`` mode, where the server decides).
        warning: what the user must know about this plan, or ``""``.
    """

    mode: Mode
    start_step: int | None
    num_steps: int | None
    window: Window
    recorded: Window | None
    warning: str = ""

    @property
    def trims(self) -> bool:
        """Whether the trace is cut to :attr:`window` after the stop."""
        return self.mode == "trim"


@checked
def plan_window(
    window: Window,
    *,
    features: Features,
    plugin: bool,
    start: str = "auto",
    by_stage: bool = False,
    inactive: str = "",
    profiler: Profiler | None = "v1",
    token_plugin: bool = False,
) -> Plan:
    """Choose how to record ``window`` on a server with ``features`` (``plugin``: the server
    plugin answered on every scheduler; ``token_plugin``: it decides token windows there).
    ``start`` is the user's choice among :data:`START_MODES`; ``inactive``, when known, is why the
    plugin is not active there (it goes into the trim warning); ``profiler`` is the profiler the
    server runs (``v2``: ``SGLANG_PROFILE_V2=1``, which takes nothing but the plugin's windows;
    ``None``: not known, planned as SGLang's default, v1)."""
    if start not in START_MODES:
        raise ConfigError(f"must be one of {list(START_MODES)} (got {shown(start)})", path="options.sglang.start")
    fallback = ""
    if window.in_tokens:
        if token_plugin and start != "trim" and not by_stage:
            begin, count = encode_tokens(window)
            return Plan(mode="tokens", start_step=begin, num_steps=count or None, window=window, recorded=None)
        why = (
            "as options.sglang.start is 'trim'"
            if start == "trim"
            else inactive or "the server does not report the token-window plugin"
        )
        fallback = (
            f"the trace is in steps: window {window} is recorded as steps {window.in_steps()} of the session, because {why}; "
            "a token window needs the profwin-sglang server plugin in the SGLang server's environment"
        )
        window = window.in_steps()
    plan = _plan_steps(
        window, features=features, plugin=plugin, start=start, by_stage=by_stage, inactive=inactive, profiler=profiler
    )
    if fallback:
        plan = evolve(plan, warning=f"{fallback}. {plan.warning}" if plan.warning else fallback)
    return plan


def _plan_steps(
    window: Window, *, features: Features, plugin: bool, start: str, by_stage: bool, inactive: str, profiler: Profiler | None
) -> Plan:
    if by_stage:
        return _by_stage(window)
    if start == "relative" and not plugin:
        raise ConfigError(
            "needs the profwin-sglang server plugin in the SGLang server's environment "
            "(pip install profwin-sglang there, then restart the server); the server does not report it. "
            "Use start='auto' or 'trim' to record steps 0:end and trim the trace instead",
            path="options.sglang.start",
        )
    if plugin and start != "trim":
        return Plan(
            mode="relative",
            start_step=RELATIVE_BASE + window.start,
            num_steps=window.length,
            window=window,
            recorded=window,
        )
    if profiler == "v2":
        raise ConfigError(v2_refusal(), path="window")
    if window.start == 0 and features.exact_immediate and start != "trim":
        return Plan(mode="immediate", start_step=None, num_steps=window.length, window=window, recorded=window)
    return _trim(window, features, forced=start == "trim", inactive="" if plugin else inactive)


_TOLD_BY = {
    "plugin": "as its profwin-sglang plugin says",
    "env": "as its environment, exposed by SGLANG_EXPOSE_OWN_ENV_VARS=1, says",
    "process": "as the environment of the process serving it on this machine says",
    "declared": "as options.sglang.profiler says",
}


def v2_refusal(source: str | None = None) -> str:
    """Why a server without the profwin-sglang plugin is sent nothing: it runs SGLang's v2
    profiler (``SGLANG_PROFILE_V2=1``), as ``source`` told (a key of :data:`_TOLD_BY`).
    Measured on SGLang 0.5.23: the v2 profiler asserts ``start_step is None`` and
    ``profile_by_stage`` and raises on a manual stop, each taking the scheduler down. (A server
    that cannot say which profiler it runs is planned for SGLang's default, v1:
    :data:`ASSUMED_V1`.)"""
    told = f", {_TOLD_BY[source]}" if source in _TOLD_BY else ""
    return (
        f"this SGLang server runs the v2 profiler ({V2_ENV}=1){told}; that profiler takes its scheduler down on a start_step, "
        "an immediate start or a stop, so profwin sends it "
        "nothing. Install profwin-sglang in the server's environment (its server plugin records exact windows with "
        f"either profiler), or restart the server without {V2_ENV}"
    )


ASSUMED_V1 = (
    "profwin assumed this SGLang server runs SGLang's default profiler (v1; SGLANG_PROFILE_V2 is off by default in "
    "every release): it reports neither profwin-sglang's server plugin nor its environment, and no SGLang process "
    "serving it on this machine could be read. A server started with SGLANG_PROFILE_V2=1 would be taken down by this "
    "request: for such a server set options.sglang.profiler: v2 (profwin then sends it nothing) or install "
    "profwin-sglang in its environment"
)
"""What profwin says, once per server, when it assumed the default profiler (docs/backends/sglang.md)."""


def _by_stage(window: Window) -> Plan:
    if window.start != 0 or window.end is None:
        raise ConfigError(
            f"by-stage mode records the first N prefill and the first N decode batches; give the window as ':N' (got {window})",
            path="options.sglang.by_stage",
        )
    return Plan(mode="by_stage", start_step=None, num_steps=window.end, window=window, recorded=window)


def trim_records(window: Window) -> Window:
    """What the server records when ``window`` is kept by trimming: the steps from the session
    start to the window's end (immediate mode has no start offset)."""
    return Window(0, window.end)


def _trim(window: Window, features: Features, *, forced: bool, inactive: str = "") -> Plan:
    recorded = trim_records(window)
    # Before SGLang PR #30215 immediate mode stopped one batch early: ask for one more, and the
    # trim keeps batches by their position in the trace either way.
    extra = 0 if features.exact_immediate else 1
    num_steps = None if window.end is None else window.end + extra
    if forced:
        why = "as options.sglang.start is 'trim',"
    elif inactive:
        why = f"with the profwin-sglang server plugin not active on this SGLang ({inactive}),"
    elif features.exact_immediate:
        why = "without the profwin-sglang server plugin"
    else:
        why = f"on SGLang {features.label}, whose immediate mode may record one batch fewer (PR #30215),"
    cut = f"the first {window.start} batch(es) are cut out of" if window.start else "any extra batch is cut from"
    warning = (
        f"SGLang counts start_step from server launch, so {why} window {window} is recorded as steps {recorded} "
        f"from the session start and {cut} the trace after the stop; a trace this machine cannot read keeps "
        f"all that was recorded"
    )
    return Plan(mode="trim", start_step=None, num_steps=num_steps, window=window, recorded=recorded, warning=warning)
