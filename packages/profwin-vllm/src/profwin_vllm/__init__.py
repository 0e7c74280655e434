"""profwin plugin for vLLM: profile exactly a window of engine steps, on any vLLM version that can.

- :func:`session`: profile a window of an ``LLM``, an ``AsyncLLM`` or running servers, and get
  the trace files with the steps they cover.
- :func:`settings_for` / :func:`render`: what a vLLM version is sent for a spec (launch config,
  environment, per-session bounds), as data or as text to paste.
- :class:`VllmBackend`: the ``vllm`` backend of the ``profwin`` CLI.

See docs/backends/vllm.md for the version table and the off-by-one.
"""

from __future__ import annotations

from profwin_vllm.backend import VllmBackend
from profwin_vllm.client import Reply
from profwin_vllm.remote import OnActive
from profwin_vllm.session import SessionError, VllmSession, session
from profwin_vllm.settings import (
    FORMS,
    PLATFORMS,
    VllmOptions,
    VllmSettings,
    delay_iterations,
    max_iterations,
    render,
    settings_for,
)
from profwin_vllm.traces import STEP_ANNOTATION, count_steps
from profwin_vllm.versions import Mechanism, VllmVersion, installed_version

__all__ = [
    "FORMS",
    "PLATFORMS",
    "STEP_ANNOTATION",
    "Mechanism",
    "OnActive",
    "Reply",
    "SessionError",
    "VllmBackend",
    "VllmOptions",
    "VllmSession",
    "VllmSettings",
    "VllmVersion",
    "count_steps",
    "delay_iterations",
    "installed_version",
    "max_iterations",
    "render",
    "session",
    "settings_for",
]
