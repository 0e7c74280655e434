"""The plugin API: the contracts a profwin plugin implements or calls to be a plugin.

Plugins (``profwin-traces``, ``profwin-vllm``, ``profwin-sglang``, ``profwin-npu``,
``profwin-memory``, the trainer integrations, ``profwin-ray``, and yours) import from
``profwin.plugin`` and its five toolkits, and nowhere else in ``profwin``; the workspace's lint
enforces it, so core can reorganise its modules without breaking a plugin. What is here is
versioned by :data:`PLUGIN_API`. See docs/plugins.md for a backend written end to end.

Here, what every kind of plugin shares:

- being found: :class:`PluginSpec` under one of the entry-point groups (``*_GROUP``),
  :data:`PLUGIN_API`, and how the plugin's traces mark steps (:class:`StepMarker`,
  :data:`TORCH_MARKER`);
- what each kind implements: :class:`Backend` (an engine that takes the window as arguments),
  :class:`Profiler` and its :class:`Driver` (in-process), :class:`Cluster` with its
  :class:`ClusterReport` and :class:`CollectInterrupted`, :class:`Command` (joins ``profwin``'s
  command line), :class:`SpecFormat` (another tool's config read as a spec),
  :class:`TrainerIntegration` (the verb pair ``enable``/``disable`` and its failure policy);
- what they return: :class:`Artifact`, :class:`RemoteResult` (and :func:`fan_out`, which runs
  one call per engine);
- the values they take: :class:`Window`, :class:`ProfileSpec`, :data:`RankSelection`, a plugin's
  ``spec.options[name]`` read by :func:`parse_options` and its validators (:func:`at_least`,
  :func:`choice`, :func:`flag`, :func:`names`), the activities by :func:`resolve_activities`;
- the error family (:class:`ProfwinError` and its subclasses; :func:`shown` quotes a value in a
  message, :func:`unknown_key` names a key that is not known), arguments checked where they enter
  (:func:`checked`) and :func:`warn`;
- other plugins, found by name: :func:`backend`, :func:`cluster`, :func:`engine_flavours`,
  :func:`step_markers`;
- a plugin's own models and root: :class:`JsonForm` and :func:`to_json` (the one converter),
  :func:`lazy_exports` (a package root whose names are imported on first use).

The toolkits, each imported by the plugins that need it:

- :mod:`profwin.plugin.engines`: an engine backend's plan and targets, engine versions, the token
  windows and the timeline inside an engine;
- :mod:`profwin.plugin.remote`: reaching engines, the HTTP client and remote sessions;
- :mod:`profwin.plugin.files`: reading input safely, writing atomically, versioned formats, the
  provenance record and the marks profwin leaves in traces, a long window written in parts;
- :mod:`profwin.plugin.cli`: a plugin's command line (one-line errors, checked arguments);
- :mod:`profwin.plugin.trainers`: the rollout profiler, its settings, and the readers of a
  trainer's config.

Each module lists its names once, as the imports below: what type checkers read is what runs.
"""

from profwin.activities import resolve_activities as resolve_activities
from profwin.arguments import checked as checked
from profwin.arguments import warn as warn
from profwin.discovery import backend as backend
from profwin.discovery import cluster as cluster
from profwin.discovery import engine_flavours as engine_flavours
from profwin.discovery import step_markers as step_markers
from profwin.engine import Backend as Backend
from profwin.errors import ConfigError as ConfigError
from profwin.errors import PluginError as PluginError
from profwin.errors import ProfilingDisabled as ProfilingDisabled
from profwin.errors import ProfwinError as ProfwinError
from profwin.errors import WindowWarning as WindowWarning
from profwin.errors import shown as shown
from profwin.errors import unknown_key as unknown_key
from profwin.json_form import JsonForm as JsonForm
from profwin.json_form import to_json as to_json
from profwin.lazy import lazy_exports as lazy_exports
from profwin.markers import TORCH_MARKER as TORCH_MARKER
from profwin.markers import StepMarker as StepMarker
from profwin.options import at_least as at_least
from profwin.options import choice as choice
from profwin.options import flag as flag
from profwin.options import names as names
from profwin.options import parse_options as parse_options
from profwin.protocols import BACKENDS_GROUP as BACKENDS_GROUP
from profwin.protocols import CLUSTERS_GROUP as CLUSTERS_GROUP
from profwin.protocols import COMMANDS_GROUP as COMMANDS_GROUP
from profwin.protocols import ENGINE_FLAVOURS_GROUP as ENGINE_FLAVOURS_GROUP
from profwin.protocols import PLUGIN_API as PLUGIN_API
from profwin.protocols import PROFILERS_GROUP as PROFILERS_GROUP
from profwin.protocols import SPEC_FORMATS_GROUP as SPEC_FORMATS_GROUP
from profwin.protocols import TRAINERS_GROUP as TRAINERS_GROUP
from profwin.protocols import Artifact as Artifact
from profwin.protocols import Cluster as Cluster
from profwin.protocols import ClusterReport as ClusterReport
from profwin.protocols import CollectInterrupted as CollectInterrupted
from profwin.protocols import Command as Command
from profwin.protocols import Driver as Driver
from profwin.protocols import PluginSpec as PluginSpec
from profwin.protocols import Profiler as Profiler
from profwin.protocols import RemoteResult as RemoteResult
from profwin.protocols import SpecFormat as SpecFormat
from profwin.protocols import fan_out as fan_out
from profwin.rollouts import TrainerIntegration as TrainerIntegration
from profwin.spec import ProfileSpec as ProfileSpec
from profwin.spec import RankSelection as RankSelection
from profwin.window import Window as Window

# The names above are the surface: listed once, as its imports.
__all__ = sorted(name for name in dir() if not name.startswith("_"))
