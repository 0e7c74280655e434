"""profwin-sglang: profile an exact, session-relative window of scheduler batches on SGLang.

* :func:`session` — start/stop a window on live servers (URLs) or an in-process ``Engine``.
* :class:`SglangBackend` — the ``profwin`` CLI's ``--engine sglang`` (describe, args, start, stop).
* :func:`profile_request`, :func:`launch_env`, :func:`plan_window` — the pure mappings.
* :mod:`profwin_sglang.server_plugin` — the SGLang-side hook that makes ``start_step`` relative;
  it is registered as an SGLang general plugin when this package is installed beside SGLang.
"""

from __future__ import annotations

from profwin_sglang.backend import SglangBackend
from profwin_sglang.http import ServerError, ServerTimeout
from profwin_sglang.plan import START_MODES, Plan, plan_window
from profwin_sglang.request import SGLANG_ACTIVITIES, SglangOptions, activities_for, launch_env, options_of, profile_request
from profwin_sglang.server_plugin import RELATIVE_BASE
from profwin_sglang.session import SessionError, SglangSession, session
from profwin_sglang.targets import ServerInfo
from profwin_sglang.traces import count_steps, step_names, trim_in_place
from profwin_sglang.versions import VERIFIED_VERSION, Features, features

__all__ = [
    "RELATIVE_BASE",
    "SGLANG_ACTIVITIES",
    "START_MODES",
    "VERIFIED_VERSION",
    "Features",
    "Plan",
    "ServerError",
    "ServerInfo",
    "ServerTimeout",
    "SessionError",
    "SglangBackend",
    "SglangOptions",
    "SglangSession",
    "activities_for",
    "count_steps",
    "features",
    "launch_env",
    "options_of",
    "plan_window",
    "profile_request",
    "session",
    "step_names",
    "trim_in_place",
]
