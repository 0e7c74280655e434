"""slime's seam, its rollout function: ``--rollout-function-path profwin_slime.generate_rollout``.

slime's ``RolloutManager`` (a Ray actor) loads the function named by ``--rollout-function-path``
once and calls it for every rollout, ``fn(args, rollout_id, data_source, evaluation=...)``, and
for evaluation rollouts the one named by ``--eval-function-path`` (the same one unless set).
:func:`generate_rollout` is that function: for a chosen rollout it opens a profiling session on
every worker slime's router lists (``http://{args.sglang_router_ip}:{args.sglang_router_port}``,
``GET /workers``), calls the function slime would have called, and closes the session (also when
that function raises); for any other rollout it only counts.

slime loading the function is the switch: its first call enables profiling (:func:`enable`,
which a process may also call itself, with settings of its own instead of ``args``'s), and
:func:`disable` makes it call the wrapped function and nothing else. The verb pair, its policy and
``records()`` are core's (:class:`profwin.plugin.TrainerIntegration`): a slime outside the
supported releases, settings that cannot be read, a router address missing, each is one warning
and the rollout runs unprofiled. What cannot run at all is slime's own configuration's to fix: a
``profwin_rollout_function`` that cannot be loaded is a :class:`~profwin.ConfigError`.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from typing import Any

from profwin.plugin import ConfigError, TrainerIntegration, checked, shown
from profwin.plugin.trainers import RolloutProfiler
from profwin_slime._plugin import PLUGIN
from profwin_slime.settings import KEYS, SlimeProfiling, rollout_function

__all__ = ["INTEGRATION", "SlimeIntegration", "disable", "enable", "generate_rollout", "records"]


class SlimeIntegration(TrainerIntegration[SlimeProfiling]):
    """slime's rollout function, profiled (see the module doc)."""

    trainer = "slime"
    settings_type = SlimeProfiling

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._setups: dict[int, _Setup] = {}  # by id(args): slime passes the same args every time
        self._setup_lock = threading.Lock()

    def default_settings(self) -> None:
        """None: each rollout reads the settings from slime's ``args``."""
        return None

    def install(self, settings: SlimeProfiling | None) -> list[str]:
        # slime loads the function itself: profiling is in place once it is on.
        with self._setup_lock:
            self._setups.clear()  # read again with these settings
        return [] if self.enabled else self.on_disable(f"{__name__}.generate_rollout", lambda: True)

    def setup(self, args: Any) -> _Setup:
        """What ``args`` configures, read once per ``args`` object."""
        with self._setup_lock:
            setup = self._setups.get(id(args))
            if setup is None or setup.args is not args:
                setup = self._setups[id(args)] = _Setup(self, args)
            return setup


class _Setup:
    """The function to call and the profiler (``None``: unprofiled) for one ``args`` object."""

    def __init__(self, integration: SlimeIntegration, args: Any) -> None:
        self.args = args
        self.wrapped = _load(rollout_function(args))  # slime's configuration: it must name a function
        self.settings: SlimeProfiling | None = None
        self.profiler: RolloutProfiler | None = None
        if not integration.enabled:
            return  # read when enabled (enable() asks every args object again)
        try:
            self.settings = integration.settings or SlimeProfiling.from_args(args)
            if self.settings is not None:
                self.profiler = integration.profiler(
                    "sglang", self.settings.spec_here(), self.settings.rollouts,
                    router=_router(args), api_key=_api_key(args), timeout=self.settings.timeout,
                )  # fmt: skip
        except Exception as exc:  # profiling never stops slime: its rollouts run unprofiled
            self.profiler = None
            integration.refuse(exc)


INTEGRATION = SlimeIntegration(PLUGIN)
"""profwin-slime's one integration (its plugin's target)."""
enable, disable, records = INTEGRATION.enable, INTEGRATION.disable, INTEGRATION.records


@checked
def generate_rollout(args: Any, rollout_id: int, data_source: Any, evaluation: bool = False) -> Any:
    """slime's rollout function with profiling: the chosen rollouts (``args.profwin_rollouts``)
    are profiled on every worker of slime's router, evaluation rollouts only with
    ``args.profwin_eval``; the result is what the wrapped function returned, and what it raises
    propagates unchanged (after the profiling session was stopped and its files collected)."""
    if INTEGRATION.enabled is None:
        INTEGRATION.enable()  # slime loading this function is the switch
    setup = INTEGRATION.setup(args)
    profiler, settings = setup.profiler, setup.settings

    def call() -> Any:
        return setup.wrapped(args, rollout_id, data_source, evaluation=evaluation)

    if not INTEGRATION.enabled or profiler is None or settings is None or (evaluation and not settings.evaluation):
        return call()
    return INTEGRATION.around(profiler, rollout_id, call, kind="eval" if evaluation else "rollout")


def _load(path: str) -> Callable[..., Any]:
    """The function at a dotted path, as slime's ``load_function`` finds it."""
    module_name, _, attribute = path.rpartition(".")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load {shown(path)}: {type(exc).__name__}: {exc}", path=KEYS["rollout_function"]) from None
    if not callable(function):
        raise ConfigError(f"{path} is a {type(function).__name__}, not a function", path=KEYS["rollout_function"])
    return function  # type: ignore[no-any-return]


def _router(args: Any) -> str:
    """slime's router (``args``; slime wraps an IPv6 address in brackets already)."""
    ip, port = getattr(args, "sglang_router_ip", None), getattr(args, "sglang_router_port", None)
    if not ip or not port:
        raise ConfigError(
            f"slime's router address is not set (sglang_router_ip={shown(ip)}, sglang_router_port={shown(port)}): "
            "profwin-slime profiles the workers slime's router lists",
            path="sglang_router_ip",
        )
    return f"http://{ip}:{port}"


def _api_key(args: Any) -> str | None:
    """The API key SGLang's profile endpoints take, if the servers have one:
    ``--sglang-admin-api-key``, else ``--sglang-api-key``, else ``$PROFWIN_API_KEY``."""
    key = (
        getattr(args, "sglang_admin_api_key", None) or getattr(args, "sglang_api_key", None) or os.environ.get("PROFWIN_API_KEY")
    )
    return key or None
