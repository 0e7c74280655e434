"""profwin: profile an exact window of generation steps on any engine.

The public API lives here; submodules hold one concern each (``window``, ``spec``, ``config``,
``discovery``, ``session``, ``torch_driver``, ``cli``; ``verl`` for verl's configs and seams).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from profwin.atomic import atomic_path
from profwin.config import load_spec, spec_from_mapping, spec_from_yaml
from profwin.discovery import PluginInfo, backend, engine_flavours, plugins, profiler, validate_options
from profwin.errors import ConfigError, PluginError
from profwin.plugin_api import (
    BACKENDS_GROUP,
    ENGINE_FLAVOURS_GROUP,
    PLUGIN_API,
    PROFILERS_GROUP,
    Artifact,
    Backend,
    Driver,
    PluginSpec,
    Profiler,
    RemoteResult,
    fan_out,
)
from profwin.session import Session, current_rank
from profwin.spec import ACTIVITIES, RECORD_OPTIONS, ProfileSpec
from profwin.verl.config import ProfilingDisabled, VerlProfiling, load_verl, spec_from_verl
from profwin.window import Window, check_bounds

try:
    __version__ = version("profwin-core")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = "0.0.0+unknown"

__all__ = [
    "ACTIVITIES",
    "BACKENDS_GROUP",
    "ENGINE_FLAVOURS_GROUP",
    "PLUGIN_API",
    "PROFILERS_GROUP",
    "RECORD_OPTIONS",
    "Artifact",
    "Backend",
    "ConfigError",
    "Driver",
    "PluginError",
    "PluginInfo",
    "PluginSpec",
    "ProfileSpec",
    "Profiler",
    "ProfilingDisabled",
    "RemoteResult",
    "Session",
    "VerlProfiling",
    "Window",
    "__version__",
    "atomic_path",
    "backend",
    "check_bounds",
    "current_rank",
    "engine_flavours",
    "fan_out",
    "load_spec",
    "load_verl",
    "plugins",
    "profiler",
    "spec_from_mapping",
    "spec_from_verl",
    "spec_from_yaml",
    "validate_options",
]
