"""The engine backends' toolkit (profwin-vllm, profwin-sglang, profwin-npu, and yours): what a
backend plans and what its engine side records. Reaching the engines (the HTTP client, remote
sessions) is :mod:`profwin.plugin.remote`'s, imported only where a plugin talks to an engine.

- a backend's plan and targets: :class:`EnginePlan`, :class:`EngineTarget`, :class:`TargetContext`,
  :class:`TargetError`, :class:`EngineBusy`, :class:`TargetSkipped` (one engine left out of a
  session, untouched, the others going on), and :func:`render_plan`;
- the engine's version: :class:`EngineVersion`, :class:`VersionSource`, :func:`installed_version`,
  :func:`engine_plugin_missing` (whether an engine started from here loads a plugin's engine side);
- how a server on this machine was started, when it cannot say: :func:`serving_processes` (the
  processes that serve a URL here, each a :class:`LocalProcess` with its command line,
  environment and working directory);
- token windows inside an engine (an engine-side plugin such as profwin-vllm's
  ``vllm.general_plugins`` entry): :class:`TokenRule` (the one rule), :func:`encode_tokens` /
  :func:`decode_tokens` (how a token window travels in an engine's own start fields;
  :func:`token_claimed`: a start value in the token windows' range, refused when it decodes to no
  window), :class:`StepTokens` (what each recorded step held; its span name is read back by
  :func:`profwin.plugin.files.parse_step_tokens`);
- the session timeline (an engine-side plugin records it for ``record: [timeline]``):
  :class:`TimelineRecorder` (a few numbers per step and per request, written beside the trace),
  :func:`encode_timeline` / :func:`decode_timeline` (how the request for it travels in an
  engine's own start field) and :func:`timeline_artifacts` (a session's timeline files among its
  new files).
"""

from profwin.engine import EngineBusy as EngineBusy
from profwin.engine import EnginePlan as EnginePlan
from profwin.engine import EngineTarget as EngineTarget
from profwin.engine import TargetContext as TargetContext
from profwin.engine import TargetError as TargetError
from profwin.engine import TargetSkipped as TargetSkipped
from profwin.engine import VersionSource as VersionSource
from profwin.render import render_plan as render_plan
from profwin.runtime.processes import LocalProcess as LocalProcess
from profwin.runtime.processes import serving_processes as serving_processes
from profwin.runtime.timeline_record import TimelineRecorder as TimelineRecorder
from profwin.runtime.timeline_record import decode_timeline as decode_timeline
from profwin.runtime.timeline_record import encode_timeline as encode_timeline
from profwin.runtime.timeline_record import timeline_artifacts as timeline_artifacts
from profwin.runtime.tokens import StepTokens as StepTokens
from profwin.runtime.tokens import TokenRule as TokenRule
from profwin.runtime.tokens import decode_tokens as decode_tokens
from profwin.runtime.tokens import encode_tokens as encode_tokens
from profwin.runtime.tokens import token_claimed as token_claimed
from profwin.runtime.versions import EngineVersion as EngineVersion
from profwin.runtime.versions import engine_plugin_missing as engine_plugin_missing
from profwin.runtime.versions import installed_version as installed_version

# The names above are the surface: listed once, as its imports.
__all__ = sorted(name for name in dir() if not name.startswith("_"))
