"""profwin-sglang: profile an exact, session-relative window of scheduler batches on SGLang.

* ``profwin.backend("sglang").plan(spec)`` — the ``/start_profile`` request and launch
  environment as an :class:`profwin.EnginePlan` (:func:`plan_for` with a known server).
* :func:`session` — start/stop a window on live servers (URLs) or an in-process ``Engine``
  (:func:`profwin.remote_session` with this backend).
* :func:`profile_request`, :func:`launch_env`, :func:`plan_window` — the pure mappings.
* :mod:`profwin_sglang.server_plugin` — the SGLang-side hook that makes ``start_step`` relative;
  it is registered as an SGLang general plugin when this package is installed beside SGLang.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin.plugin.remote import SessionError
    from profwin_sglang.backend import SglangBackend
    from profwin_sglang.options import SGLANG_ACTIVITIES, START_MODES, SglangOptions, options_of
    from profwin_sglang.plan import activities_for, launch_env, plan_for, profile_request
    from profwin_sglang.server_plugin import RELATIVE_BASE
    from profwin_sglang.session import session
    from profwin_sglang.structs import build_profile_req
    from profwin_sglang.targets import ServerInfo, SglangEngine, SglangServer
    from profwin_sglang.traces import trim_in_place
    from profwin_sglang.versions import VERIFIED_VERSION, Features, features, sglang_version
    from profwin_sglang.window import Plan, plan_window

__all__ = [
    "RELATIVE_BASE",
    "SGLANG_ACTIVITIES",
    "START_MODES",
    "VERIFIED_VERSION",
    "Features",
    "Plan",
    "ServerInfo",
    "SessionError",
    "SglangBackend",
    "SglangEngine",
    "SglangOptions",
    "SglangServer",
    "activities_for",
    "build_profile_req",
    "features",
    "launch_env",
    "options_of",
    "plan_for",
    "plan_window",
    "profile_request",
    "session",
    "sglang_version",
    "trim_in_place",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin.plugin.remote": ("SessionError",),
        "profwin_sglang.backend": ("SglangBackend",),
        "profwin_sglang.structs": ("build_profile_req",),
        "profwin_sglang.options": ("SGLANG_ACTIVITIES", "START_MODES", "SglangOptions", "options_of"),
        "profwin_sglang.plan": ("activities_for", "launch_env", "plan_for", "profile_request"),
        "profwin_sglang.server_plugin": ("RELATIVE_BASE",),
        "profwin_sglang.session": ("session",),
        "profwin_sglang.targets": ("ServerInfo", "SglangEngine", "SglangServer"),
        "profwin_sglang.traces": ("trim_in_place",),
        "profwin_sglang.versions": ("VERIFIED_VERSION", "Features", "features", "sglang_version"),
        "profwin_sglang.window": ("Plan", "plan_window"),
    },
)
