"""profwin: profile an exact window of generation steps on any engine.

The public API lives here; submodules hold one concern each (``window``, ``spec``, ``config``,
``discovery``, ``session``, ``torch_driver``, ``engine``, ``remote``, ``render``, ``http``, ``cli``;
``verl`` for verl's configs and seams). Plugins import from :mod:`profwin.plugin` only.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from profwin.atomic import atomic_path, check_output_path
from profwin.cli_support import run_cli
from profwin.config import load_spec, spec_from_mapping, spec_from_yaml
from profwin.discovery import PluginInfo, backend, engine_flavours, plugins, profiler, validate_options
from profwin.engine import Backend, EngineBusy, EnginePlan, EngineTarget, TargetContext, TargetError
from profwin.errors import ConfigError, PluginError, WindowWarning
from profwin.plugin_api import (
    BACKENDS_GROUP,
    ENGINE_FLAVOURS_GROUP,
    PLUGIN_API,
    PROFILERS_GROUP,
    Artifact,
    Driver,
    PluginSpec,
    Profiler,
    RemoteResult,
    fan_out,
)
from profwin.remote import RemoteSession, SessionError, remote_session
from profwin.render import FORMS, render_plan
from profwin.router import RouterError, RouterWorkers, router
from profwin.session import Session, current_rank
from profwin.spec import ACTIVITIES, RECORD_OPTIONS, ProfileSpec
from profwin.traces.markers import StepMarker
from profwin.verl.config import ProfilingDisabled, VerlProfiling, load_verl, spec_from_verl
from profwin.window import MAX_STEP, Window, check_bounds

try:
    __version__ = version("profwin-core")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = "0.0.0+unknown"

__all__ = [
    "ACTIVITIES",
    "BACKENDS_GROUP",
    "ENGINE_FLAVOURS_GROUP",
    "FORMS",
    "MAX_STEP",
    "PLUGIN_API",
    "PROFILERS_GROUP",
    "RECORD_OPTIONS",
    "Artifact",
    "Backend",
    "ConfigError",
    "Driver",
    "EngineBusy",
    "EnginePlan",
    "EngineTarget",
    "PluginError",
    "PluginInfo",
    "PluginSpec",
    "ProfileSpec",
    "Profiler",
    "ProfilingDisabled",
    "RemoteResult",
    "RemoteSession",
    "RouterError",
    "RouterWorkers",
    "Session",
    "SessionError",
    "StepMarker",
    "TargetContext",
    "TargetError",
    "VerlProfiling",
    "Window",
    "WindowWarning",
    "__version__",
    "atomic_path",
    "backend",
    "check_bounds",
    "check_output_path",
    "current_rank",
    "engine_flavours",
    "fan_out",
    "load_spec",
    "load_verl",
    "plugins",
    "profiler",
    "remote_session",
    "render_plan",
    "router",
    "run_cli",
    "spec_from_mapping",
    "spec_from_verl",
    "spec_from_yaml",
    "validate_options",
]
