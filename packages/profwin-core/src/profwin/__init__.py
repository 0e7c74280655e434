"""profwin: profile an exact window of generation steps on any engine.

This is the surface for users: the window and the spec, loading specs, the in-process
:class:`Session`, live engines (:func:`remote_session`, :func:`backend`, :func:`render_plan`), a
trainer's chosen rollouts (:class:`RolloutProfiler`, :class:`Rollouts`),
plugin discovery, and the one error family under :class:`ProfwinError`. Reading traces is the
distribution profwin-traces (``profwin_traces``, with its ``TraceError``); writing a plugin is
:mod:`profwin.plugin` (the plugin authors' surface).
docs/architecture.md lays out the modules behind both and the layers they sit in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.lazy import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.lazy): `import profwin` imports none of them
    from profwin.about import __version__
    from profwin.config import load_spec, spec_from_mapping, spec_from_yaml
    from profwin.discovery import PluginInfo, backend, plugins, profiler, validate_options
    from profwin.engine import EngineBusy, EnginePlan, TargetError
    from profwin.errors import ConfigError, PluginError, ProfilingDisabled, ProfwinError, WindowWarning
    from profwin.parts import PartsMemoryError  # noqa: F401  (reachable, not listed: profwin.parts documents it)
    from profwin.protocols import Artifact, RemoteResult
    from profwin.render import FORMS, render_plan
    from profwin.rollouts import RolloutProfiler, RolloutRecord  # noqa: F401  (RolloutRecord: reachable, not listed)
    from profwin.runtime.remote import RemoteSession, SessionError, remote_session

    # `profwin.router(URL)`: reachable here, outside the 30-name user surface (docs/scale-out.md).
    from profwin.runtime.router import RouterError, RouterWorkers, router  # noqa: F401
    from profwin.selection import Rollouts
    from profwin.session import Session, current_rank
    from profwin.spec import ACTIVITIES, RECORD_OPTIONS, ProfileSpec
    from profwin.window import Window

__all__ = [
    "ACTIVITIES",
    "FORMS",
    "RECORD_OPTIONS",
    "Artifact",
    "ConfigError",
    "EngineBusy",
    "EnginePlan",
    "PluginError",
    "PluginInfo",
    "ProfileSpec",
    "ProfilingDisabled",
    "ProfwinError",
    "RemoteResult",
    "RemoteSession",
    "RolloutProfiler",
    "Rollouts",
    "Session",
    "SessionError",
    "TargetError",
    "Window",
    "WindowWarning",
    "__version__",
    "backend",
    "current_rank",
    "load_spec",
    "plugins",
    "profiler",
    "remote_session",
    "render_plan",
    "spec_from_mapping",
    "spec_from_yaml",
    "validate_options",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin.about": ("__version__",),
        "profwin.config": ("load_spec", "spec_from_mapping", "spec_from_yaml"),
        "profwin.discovery": ("PluginInfo", "backend", "plugins", "profiler", "validate_options"),
        "profwin.engine": ("EngineBusy", "EnginePlan", "TargetError"),
        "profwin.errors": ("ConfigError", "PluginError", "ProfilingDisabled", "ProfwinError", "WindowWarning"),
        "profwin.parts": ("PartsMemoryError",),
        "profwin.protocols": ("Artifact", "RemoteResult"),
        "profwin.runtime.remote": ("RemoteSession", "SessionError", "remote_session"),
        "profwin.render": ("FORMS", "render_plan"),
        "profwin.rollouts": ("RolloutProfiler", "RolloutRecord"),
        "profwin.selection": ("Rollouts",),
        "profwin.runtime.router": ("RouterError", "RouterWorkers", "router"),
        "profwin.session": ("Session", "current_rank"),
        "profwin.spec": ("ACTIVITIES", "RECORD_OPTIONS", "ProfileSpec"),
        "profwin.window": ("Window",),
    },
)
