"""The plugin API: everything a profwin plugin may import from core, in one module.

Plugins (``profwin-traces``, ``profwin-vllm``, ``profwin-sglang``, ``profwin-npu``,
``profwin-memory``, and yours) import from here and nowhere else in ``profwin``; the workspace's lint enforces it, so core can
reorganise its modules without breaking a plugin. What is here is versioned by
:data:`PLUGIN_API`. See docs/plugins.md for a backend written end to end.

Groups of names:

- entry points: :class:`PluginSpec`, :data:`PLUGIN_API`, the group names, :class:`StepMarker`
  (how the plugin's traces mark steps) and :data:`TORCH_MARKER`;
- backends (engines that take the window as arguments): :class:`Backend`,
  :class:`EnginePlan`, :class:`EngineTarget`, :class:`TargetContext`, :class:`TargetError`,
  :class:`EngineBusy`, :class:`EngineVersion`, :func:`installed_version`,
  :class:`TargetSkipped` (one engine left out of a session, untouched, the others going on),
  :func:`serving_processes` and :class:`LocalProcess` (who serves a URL on this machine, with its environment),
  :func:`engine_plugin_missing` (whether an engine started from here loads a plugin's engine side), the HTTP client
  (:class:`ServerClient`, :func:`request`, :class:`Reply`, :func:`normalize_url`),
  :func:`backend` (another installed backend, e.g. for an integration such as profwin-verl),
  :func:`folder_listing` (what a session lists to find an engine's new files: a target whose
  engine writes on another machine lists them there with it, see :class:`EngineTarget`);
- in-process profilers: :class:`Profiler`, :class:`Driver`, :class:`WindowedProfile`,
  :data:`STEP_MARKER`, :func:`atomic_path`, :func:`write_atomic`, and for one that writes a
  long window in parts (``writes_parts = True``) :class:`Part`, :func:`part_name` and
  :class:`PartsMemoryError`;
- token windows inside an engine (an engine-side plugin such as profwin-vllm's
  ``vllm.general_plugins`` entry): :class:`TokenRule` (the one rule), :func:`encode_tokens` /
  :func:`decode_tokens` (how a token window travels in an engine's own start fields; :func:`token_claimed`:
  a start value in the token windows' range, refused when it decodes to no window),
  :class:`StepTokens` (what each recorded step held: ``StepTokens.of(...).span_name()``, the
  ``record_function`` name, beginning :data:`TOKENS_PREFIX`; :func:`parse_step_tokens` reads it back);
- the session timeline (an engine-side plugin records it for ``record: [timeline]``):
  :class:`TimelineRecorder` (a few numbers per step and per request, written beside the trace;
  :data:`TIMELINE`: the file's layout, for its readers),
  :func:`encode_timeline` / :func:`decode_timeline` (how the request for it travels in an engine's
  own start field) and :func:`timeline_artifacts` (a session's timeline files among its new files);
- reading files: :func:`open_input`, :func:`read_input` (regular files, FIFOs and pipes only, bounded)
  and :func:`expand_user` (``~`` and ``~user`` expanded strictly: an unknown user is a :class:`ConfigError`),
  :func:`parse_json` (JSON within the spec bounds, never a ``RecursionError``);
- files a plugin writes and reads back: :class:`Format` (their name and version under
  :data:`FORMAT_KEY`: older versions read, newer ones refused with the version wanted);
- spec formats (another tool's configs read as a spec): :class:`SpecFormat`,
  :data:`SPEC_FORMATS_GROUP`, the document readers :func:`read_document`, :func:`select`,
  :func:`plain`, and :func:`spec_from_mapping`; a trainer's spec setting (a window's text, JSON
  text or a mapping): :func:`spec_mapping`;
- a plugin's package root: :func:`lazy_exports` (its public names imported on first use, so
  that loading its entry point stays cheap);
- a plugin's own command line: :func:`run_cli` (one-line errors and exit codes),
  :class:`CliParser` (argparse whose errors :func:`run_cli` reports) and :func:`print_json`,
  imported on first use so the plugin API itself stays free of command-line machinery; commands
  that join ``profwin`` itself (:class:`Command` under :data:`COMMANDS_GROUP`, as profwin-traces'
  ``summarize``) take their arguments' types from the same place: :func:`int_arg`, :func:`step_arg`,
  :func:`window_arg`, :func:`cluster_option` (``--ray [ADDRESS]``), and end with :func:`how_to_view`;
- traces profwin writes, as their readers find them (profwin-traces): the registry of
  step markers (:func:`step_markers`), and the provenance record (:mod:`profwin.provenance`: the
  trace's :data:`PROVENANCE_KEY` and its sidecar, :func:`sidecar_path` (:data:`SIDECAR_SUFFIX`),
  both in :data:`PROVENANCE_FORMAT`);
- trainer integrations (profwin-verl, -slime, -openrlhf, -trl): :data:`TRAINERS_GROUP`,
  :class:`TrainerIntegration` (the verb pair ``enable``/``disable``, its failure policy, the
  version check, ``records()`` and the pieces around a seam), :class:`RolloutSettings` (the base
  of each one's settings type), and :class:`RolloutProfiler` over a :class:`Rollouts` selection,
  with a :class:`RolloutRecord` per profiled rollout;
- cluster plugins (profwin-ray): :class:`Cluster`, :class:`ClusterReport`,
  :class:`CollectInterrupted`, :data:`CLUSTERS_GROUP`, :func:`cluster` (load one by name);
- a plugin's public functions and classes: :func:`checked` (their arguments checked against
  their type hints where they enter, a bad one a :class:`ConfigError` naming it), and
  :func:`warn` (``warnings.warn`` whose ``stacklevel`` does not count the checker's frames);
- shared: :class:`ProfileSpec`, :data:`RankSelection`, :class:`Window`, :class:`Artifact`,
  :class:`RemoteResult`, the error family (:class:`ProfwinError` and its subclasses),
  :func:`parse_options` and its validators, :func:`resolve_activities`,
  :func:`engine_flavours`, :func:`fan_out`, the models' JSON form (:class:`JsonForm`,
  :func:`to_json`, :func:`json_ready`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin import protocols
from profwin.lazy import lazy_exports
from profwin.protocols import *  # noqa: F403  (all of protocols.__all__, added to this __all__ below)

if TYPE_CHECKING:  # imported on first use (profwin.lazy), so a plugin's entry point loads in a few ms
    from profwin.activities import resolve_activities
    from profwin.arguments import checked, warn
    from profwin.atomic import atomic_path, check_output_path, write_atomic
    from profwin.cli_runner import (
        CliParser,
        cluster_option,
        how_to_view,
        int_arg,
        print_json,
        run_cli,
        step_arg,
        window_arg,
    )
    from profwin.config import spec_from_mapping, spec_mapping
    from profwin.discovery import backend, cluster, engine_flavours, step_markers
    from profwin.documents import plain, read_document, select
    from profwin.engine import (
        Backend,
        EngineBusy,
        EnginePlan,
        EngineTarget,
        TargetContext,
        TargetError,
        TargetSkipped,
        VersionSource,
    )
    from profwin.errors import ConfigError, PluginError, ProfilingDisabled, ProfwinError, WindowWarning, shown, unknown_key
    from profwin.formats import FORMAT_KEY, Format
    from profwin.http import Reply, ServerClient, normalize_url, request
    from profwin.inputs import expand_user, open_input, parse_json, read_input
    from profwin.json_form import JsonForm, json_ready, to_json
    from profwin.markers import TORCH_MARKER, StepMarker
    from profwin.options import at_least, choice, flag, names, parse_options
    from profwin.parts import Part, PartsMemoryError, part_name
    from profwin.processes import LocalProcess, serving_processes
    from profwin.provenance import FORMAT as PROVENANCE_FORMAT
    from profwin.provenance import KEY as PROVENANCE_KEY
    from profwin.provenance import SIDECAR_SUFFIX, sidecar_path
    from profwin.remote import (
        OnActive,
        RemoteSession,
        SessionError,
        folder_listing,
        is_session_prefix,
        remote_session,
        session_function,
    )
    from profwin.render import render_plan
    from profwin.rollouts import RolloutProfiler, RolloutRecord, RolloutSettings, TrainerIntegration
    from profwin.selection import Rollouts
    from profwin.spec import ProfileSpec, RankSelection
    from profwin.timeline_record import LAYOUT as TIMELINE
    from profwin.timeline_record import TimelineRecorder, timeline_artifacts
    from profwin.timeline_record import decode as decode_timeline
    from profwin.timeline_record import encode as encode_timeline
    from profwin.tokens import TOKENS_PREFIX, StepTokens, TokenRule, parse_step_tokens
    from profwin.tokens import claimed as token_claimed
    from profwin.tokens import decode as decode_tokens
    from profwin.tokens import encode as encode_tokens
    from profwin.torch_driver import STEP_MARKER, WindowedProfile
    from profwin.versions import EngineVersion, engine_plugin_missing, installed_version
    from profwin.window import Window

__all__ = [
    "FORMAT_KEY",
    "PROVENANCE_FORMAT",
    "PROVENANCE_KEY",
    "SIDECAR_SUFFIX",
    "STEP_MARKER",
    "TIMELINE",
    "TOKENS_PREFIX",
    "TORCH_MARKER",
    "Backend",
    "CliParser",
    "ConfigError",
    "EngineBusy",
    "EnginePlan",
    "EngineTarget",
    "EngineVersion",
    "Format",
    "JsonForm",
    "LocalProcess",
    "OnActive",
    "Part",
    "PartsMemoryError",
    "PluginError",
    "ProfileSpec",
    "ProfilingDisabled",
    "ProfwinError",
    "RankSelection",
    "RemoteSession",
    "Reply",
    "RolloutProfiler",
    "RolloutRecord",
    "RolloutSettings",
    "Rollouts",
    "ServerClient",
    "SessionError",
    "StepMarker",
    "StepTokens",
    "TargetContext",
    "TargetError",
    "TargetSkipped",
    "TimelineRecorder",
    "TokenRule",
    "TrainerIntegration",
    "VersionSource",
    "Window",
    "WindowWarning",
    "WindowedProfile",
    "at_least",
    "atomic_path",
    "backend",
    "check_output_path",
    "checked",
    "choice",
    "cluster",
    "cluster_option",
    "decode_timeline",
    "decode_tokens",
    "encode_timeline",
    "encode_tokens",
    "engine_flavours",
    "engine_plugin_missing",
    "expand_user",
    "flag",
    "folder_listing",
    "how_to_view",
    "installed_version",
    "int_arg",
    "is_session_prefix",
    "json_ready",
    "lazy_exports",
    "names",
    "normalize_url",
    "open_input",
    "parse_json",
    "parse_options",
    "parse_step_tokens",
    "part_name",
    "plain",
    "print_json",
    "read_document",
    "read_input",
    "remote_session",
    "render_plan",
    "request",
    "resolve_activities",
    "run_cli",
    "select",
    "serving_processes",
    "session_function",
    "shown",
    "sidecar_path",
    "spec_from_mapping",
    "spec_mapping",
    "step_arg",
    "step_markers",
    "timeline_artifacts",
    "to_json",
    "token_claimed",
    "unknown_key",
    "warn",
    "window_arg",
    "write_atomic",
]
__all__ += protocols.__all__  # the entry-point groups, PluginSpec and the plugin protocols


# Each name is imported from its module when first read: `run_cli`, `CliParser` and
# `print_json` (argparse, signal handling) only by plugins with a command line.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin.activities": ("resolve_activities",),
        "profwin.arguments": ("checked", "warn"),
        "profwin.atomic": ("atomic_path", "check_output_path", "write_atomic"),
        "profwin.config": ("spec_from_mapping", "spec_mapping"),
        "profwin.discovery": ("backend", "cluster", "engine_flavours", "step_markers"),
        "profwin.documents": ("plain", "read_document", "select"),
        "profwin.engine": (
            "Backend",
            "EngineBusy",
            "EnginePlan",
            "EngineTarget",
            "TargetContext",
            "TargetError",
            "TargetSkipped",
            "VersionSource",
        ),
        "profwin.errors": (
            "ConfigError",
            "PluginError",
            "ProfilingDisabled",
            "ProfwinError",
            "WindowWarning",
            "shown",
            "unknown_key",
        ),
        "profwin.formats": ("FORMAT_KEY", "Format"),
        "profwin.http": ("Reply", "ServerClient", "normalize_url", "request"),
        "profwin.inputs": ("expand_user", "open_input", "parse_json", "read_input"),
        "profwin.json_form": ("JsonForm", "json_ready", "to_json"),
        "profwin.markers": ("TORCH_MARKER", "StepMarker"),
        "profwin.options": ("at_least", "choice", "flag", "names", "parse_options"),
        "profwin.remote": (
            "OnActive",
            "RemoteSession",
            "SessionError",
            "folder_listing",
            "is_session_prefix",
            "remote_session",
            "session_function",
        ),
        "profwin.parts": ("Part", "PartsMemoryError", "part_name"),
        "profwin.provenance": ("PROVENANCE_FORMAT=FORMAT", "PROVENANCE_KEY=KEY", "SIDECAR_SUFFIX", "sidecar_path"),
        "profwin.processes": ("LocalProcess", "serving_processes"),
        "profwin.render": ("render_plan",),
        "profwin.rollouts": ("RolloutProfiler", "RolloutRecord", "RolloutSettings", "TrainerIntegration"),
        "profwin.selection": ("Rollouts",),
        "profwin.spec": ("ProfileSpec", "RankSelection"),
        "profwin.timeline_record": (
            "TIMELINE=LAYOUT",
            "TimelineRecorder",
            "decode_timeline=decode",
            "encode_timeline=encode",
            "timeline_artifacts",
        ),
        "profwin.tokens": (
            "TOKENS_PREFIX",
            "StepTokens",
            "TokenRule",
            "decode_tokens=decode",
            "encode_tokens=encode",
            "parse_step_tokens",
            "token_claimed=claimed",
        ),
        "profwin.torch_driver": ("STEP_MARKER", "WindowedProfile"),
        "profwin.versions": ("EngineVersion", "engine_plugin_missing", "installed_version"),
        "profwin.window": ("Window",),
        "profwin.cli_runner": (
            "CliParser",
            "cluster_option",
            "how_to_view",
            "int_arg",
            "print_json",
            "run_cli",
            "step_arg",
            "window_arg",
        ),
    },
)
