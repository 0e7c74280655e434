"""The plugin API: everything a profwin plugin may import from core, in one module.

Plugins (``profwin-vllm``, ``profwin-sglang``, ``profwin-npu``, ``profwin-memory``, and yours)
import from here and nowhere else in ``profwin``; the workspace's lint enforces it, so core can
reorganise its modules without breaking a plugin. What is here is versioned by
:data:`PLUGIN_API`. See docs/plugins.md for a backend written end to end.

Groups of names:

- entry points: :class:`PluginSpec`, :data:`PLUGIN_API`, the group names, :class:`StepMarker`
  (how the plugin's traces mark steps) and :data:`TORCH_MARKER`;
- backends (engines that take the window as arguments): :class:`Backend`,
  :class:`EnginePlan`, :class:`EngineTarget`, :class:`TargetContext`, :class:`TargetError`,
  :class:`EngineBusy`, :class:`EngineVersion`, :func:`installed_version`, the HTTP client
  (:func:`request`, :class:`Reply`, :func:`normalize_url`), :func:`count_steps`, :func:`trim`;
- in-process profilers: :class:`Profiler`, :class:`Driver`, :class:`WindowedProfile`,
  :data:`STEP_MARKER`, :func:`atomic_path`, :func:`write_atomic`;
- reading files: :func:`open_input`, :func:`read_input` (regular files only, bounded);
- a plugin's own command line: :func:`run_cli` (one-line errors and exit codes), :class:`CliParser`,
  :func:`print_json`;
- shared: :class:`ProfileSpec`, :class:`Window`, :class:`Artifact`, :class:`RemoteResult`,
  errors, :func:`parse_options` and its validators, :func:`resolve_activities`,
  :func:`engine_flavours`, :func:`fan_out`.
"""

from __future__ import annotations

from profwin.activities import resolve_activities
from profwin.atomic import atomic_path, check_output_path, write_atomic
from profwin.cli_support import CliParser, print_json, run_cli
from profwin.discovery import engine_flavours
from profwin.engine import Backend, EngineBusy, EnginePlan, EngineTarget, TargetContext, TargetError, VersionSource
from profwin.errors import ConfigError, PluginError, WindowWarning, shown, unknown_key
from profwin.http import Reply, normalize_url, request
from profwin.inputs import open_input, read_input
from profwin.options import choice, flag, names, parse_options
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
from profwin.remote import OnActive, RemoteSession, SessionError, remote_session, session_function
from profwin.render import render_plan
from profwin.spec import ProfileSpec, Ranks
from profwin.torch_driver import STEP_MARKER, WindowedProfile
from profwin.traces import TORCH_MARKER, StepMarker, TraceError, count_steps, trim
from profwin.versions import EngineVersion, installed_version
from profwin.window import Window

__all__ = [
    "BACKENDS_GROUP",
    "ENGINE_FLAVOURS_GROUP",
    "PLUGIN_API",
    "PROFILERS_GROUP",
    "STEP_MARKER",
    "TORCH_MARKER",
    "Artifact",
    "Backend",
    "CliParser",
    "ConfigError",
    "Driver",
    "EngineBusy",
    "EnginePlan",
    "EngineTarget",
    "EngineVersion",
    "OnActive",
    "PluginError",
    "PluginSpec",
    "ProfileSpec",
    "Profiler",
    "Ranks",
    "RemoteResult",
    "RemoteSession",
    "Reply",
    "SessionError",
    "StepMarker",
    "TargetContext",
    "TargetError",
    "TraceError",
    "VersionSource",
    "Window",
    "WindowWarning",
    "WindowedProfile",
    "atomic_path",
    "check_output_path",
    "choice",
    "count_steps",
    "engine_flavours",
    "fan_out",
    "flag",
    "installed_version",
    "names",
    "normalize_url",
    "open_input",
    "parse_options",
    "print_json",
    "read_input",
    "remote_session",
    "render_plan",
    "request",
    "resolve_activities",
    "run_cli",
    "session_function",
    "shown",
    "trim",
    "unknown_key",
    "write_atomic",
]
