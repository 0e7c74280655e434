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
  :data:`STEP_MARKER`, :func:`atomic_path`;
- a plugin's own command line: :func:`run_cli` (one-line errors and exit codes);
- cluster plugins (profwin-ray): :class:`Cluster`, :class:`ClusterReport`,
  :class:`CollectInterrupted`, :data:`CLUSTERS_GROUP`, :func:`cluster` (load one by name), and the trace summary split in two for
  them: :func:`summarize` (one file, where it lies) and :func:`merge_ranks` (on the caller),
  :func:`trace_files`, :class:`Summary`, :class:`TraceRanks` (``profwin.traces.Ranks``);
- shared: :class:`ProfileSpec`, :class:`Window`, :class:`Artifact`, :class:`RemoteResult`,
  errors, :func:`parse_options` and its validators, :func:`resolve_activities`,
  :func:`engine_flavours`, :func:`fan_out`.
"""

from __future__ import annotations

from profwin.activities import resolve_activities
from profwin.atomic import atomic_path, check_output_path
from profwin.cli_support import run_cli
from profwin.discovery import cluster, engine_flavours
from profwin.engine import Backend, EngineBusy, EnginePlan, EngineTarget, TargetContext, TargetError, VersionSource
from profwin.errors import ConfigError, PluginError, WindowWarning, shown, unknown_key
from profwin.http import Reply, normalize_url, request
from profwin.options import choice, flag, names, parse_options
from profwin.plugin_api import (
    BACKENDS_GROUP,
    CLUSTERS_GROUP,
    ENGINE_FLAVOURS_GROUP,
    PLUGIN_API,
    PROFILERS_GROUP,
    Artifact,
    Cluster,
    ClusterReport,
    CollectInterrupted,
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
from profwin.traces import (
    TORCH_MARKER,
    StepMarker,
    Summary,
    TraceError,
    count_steps,
    merge_ranks,
    summarize,
    trace_files,
    trim,
)
from profwin.traces import Ranks as TraceRanks
from profwin.versions import EngineVersion, installed_version
from profwin.window import Window

__all__ = [
    "BACKENDS_GROUP",
    "CLUSTERS_GROUP",
    "ENGINE_FLAVOURS_GROUP",
    "PLUGIN_API",
    "PROFILERS_GROUP",
    "STEP_MARKER",
    "TORCH_MARKER",
    "Artifact",
    "Backend",
    "Cluster",
    "ClusterReport",
    "CollectInterrupted",
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
    "Summary",
    "TargetContext",
    "TargetError",
    "TraceError",
    "TraceRanks",
    "VersionSource",
    "Window",
    "WindowWarning",
    "WindowedProfile",
    "atomic_path",
    "check_output_path",
    "choice",
    "cluster",
    "count_steps",
    "engine_flavours",
    "fan_out",
    "flag",
    "installed_version",
    "merge_ranks",
    "names",
    "normalize_url",
    "parse_options",
    "remote_session",
    "render_plan",
    "request",
    "resolve_activities",
    "run_cli",
    "session_function",
    "shown",
    "summarize",
    "trace_files",
    "trim",
    "unknown_key",
]
