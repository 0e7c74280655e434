"""slime's rollout function, profiled: ``--rollout-function-path profwin_slime.generate_rollout``.

slime's ``RolloutManager`` (a Ray actor) loads the function named by ``--rollout-function-path``
once and calls it for every rollout, ``fn(args, rollout_id, data_source, evaluation=...)``, and
for evaluation rollouts the one named by ``--eval-function-path`` (the same one unless set).
:func:`generate_rollout` is that function: for a chosen rollout it opens a profiling session on
every worker slime's router lists (``http://{args.sglang_router_ip}:{args.sglang_router_port}``,
``GET /workers``), calls the function slime would have called, and closes the session (also when
that function raises); for any other rollout it only counts.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from profwin.plugin import ConfigError, RolloutProfiler, RolloutRecord, checked, shown
from profwin_slime.config import SlimeProfiling, rollout_function

__all__ = ["generate_rollout", "records"]

logger = logging.getLogger("profwin_slime")


class _Setup:
    """What one ``args`` object configures, read once (slime passes the same ``args`` every time)."""

    def __init__(self, args: Any) -> None:
        self.args = args
        self.config = SlimeProfiling.from_args(args)
        self.wrapped = _load(rollout_function(args))
        self.profiler = None if self.config is None else _profiler(self.config, args)


_lock = threading.Lock()
_setup: _Setup | None = None


def _current(args: Any) -> _Setup:
    global _setup
    with _lock:
        if _setup is None or _setup.args is not args:
            _setup = _Setup(args)
        return _setup


@checked
def generate_rollout(args: Any, rollout_id: int, data_source: Any, evaluation: bool = False) -> Any:
    """slime's rollout function with profiling: the chosen rollouts (``args.profwin_rollouts``)
    are profiled on every worker of slime's router, evaluation rollouts only with
    ``args.profwin_eval``; the result is what the wrapped function returned, and what it raises
    propagates unchanged (after the profiling session was stopped and its files collected)."""
    setup = _current(args)
    profiler, config = setup.profiler, setup.config
    if profiler is None or config is None or (evaluation and not config.evaluation):
        return setup.wrapped(args, rollout_id, data_source, evaluation=evaluation)
    around = profiler.rollout(rollout_id, kind="eval" if evaluation else "rollout")
    try:
        with around:
            return setup.wrapped(args, rollout_id, data_source, evaluation=evaluation)
    finally:
        record = getattr(around, "record", None)
        if record is not None:
            _log(record)


def records() -> list[RolloutRecord]:
    """What profiling did around each profiled rollout in this process (its ``RolloutManager``), oldest first."""
    setup = _setup
    return [] if setup is None or setup.profiler is None else list(setup.profiler.records)


def _log(record: RolloutRecord) -> None:
    files = ", ".join(a.path.name for a in record.artifacts)
    if record.ok:
        logger.info("profwin: %s%s", record.message, f" ({files})" if files else "")
    else:
        logger.warning("profwin: %s", record.message)


def _load(path: str) -> Callable[..., Any]:
    """The function at a dotted path, as slime's ``load_function`` finds it."""
    module_name, _, attribute = path.rpartition(".")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load {shown(path)}: {type(exc).__name__}: {exc}", path="profwin_rollout_function") from None
    if not callable(function):
        raise ConfigError(f"{path} is a {type(function).__name__}, not a function", path="profwin_rollout_function")
    return function  # type: ignore[no-any-return]


def _profiler(config: SlimeProfiling, args: Any) -> RolloutProfiler:
    """The profiler over slime's router: its address from ``args`` (slime wraps an IPv6 address in
    brackets already); the API key SGLang's profile endpoints take, if the servers have one:
    ``--sglang-admin-api-key``, else ``--sglang-api-key``, else ``$PROFWIN_API_KEY``."""
    ip, port = getattr(args, "sglang_router_ip", None), getattr(args, "sglang_router_port", None)
    if not ip or not port:
        raise ConfigError(
            f"slime's router address is not set (sglang_router_ip={shown(ip)}, sglang_router_port={shown(port)}): "
            "profwin-slime profiles the workers slime's router lists",
            path="sglang_router_ip",
        )
    api_key = (
        getattr(args, "sglang_admin_api_key", None) or getattr(args, "sglang_api_key", None) or os.environ.get("PROFWIN_API_KEY")
    )
    return RolloutProfiler("sglang", config.spec, config.rollouts, router=f"http://{ip}:{port}", api_key=api_key or None)
