"""profwin plugin for vLLM: profile exactly a window of engine steps, on any vLLM version that can.

- ``profwin.backend("vllm").plan(spec, version=...)``: what a vLLM version is sent for a spec
  (launch config, environment, per-session request) as an :class:`profwin.EnginePlan`;
  :func:`plan_for` is the same mapping for a given version.
- :func:`session`: profile a window of an ``LLM``, an ``AsyncLLM`` or running servers, and get
  the trace files with the steps they cover (:func:`profwin.remote_session` with this backend).
- :class:`VllmBackend`: the ``vllm`` entry of ``profwin.backends``.

See docs/backends/vllm.md for the version table and the off-by-one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin.plugin.remote import SessionError
    from profwin_vllm.backend import VllmBackend
    from profwin_vllm.options import PLATFORMS, PROFILERS, VllmOptions
    from profwin_vllm.plan import delay_iterations, max_iterations, plan_for
    from profwin_vllm.session import session
    from profwin_vllm.targets import VllmEngine, VllmServer
    from profwin_vllm.traces import STEP_ANNOTATION, TraceFile, proton_artifacts, session_artifacts
    from profwin_vllm.versions import (
        CONFIG_FIELDS,
        DISTRIBUTIONS,
        NEWEST_KNOWN,
        Mechanism,
        body_fields,
        config_fields,
        mechanism,
        profiler_kinds,
        resolve_version,
        start_keywords,
    )

__all__ = [
    "CONFIG_FIELDS",
    "DISTRIBUTIONS",
    "NEWEST_KNOWN",
    "PLATFORMS",
    "PROFILERS",
    "STEP_ANNOTATION",
    "Mechanism",
    "SessionError",
    "TraceFile",
    "VllmBackend",
    "VllmEngine",
    "VllmOptions",
    "VllmServer",
    "body_fields",
    "config_fields",
    "delay_iterations",
    "max_iterations",
    "mechanism",
    "plan_for",
    "profiler_kinds",
    "proton_artifacts",
    "resolve_version",
    "session",
    "session_artifacts",
    "start_keywords",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin.plugin.remote": ("SessionError",),
        "profwin_vllm.backend": ("VllmBackend",),
        "profwin_vllm.options": ("PLATFORMS", "PROFILERS", "VllmOptions"),
        "profwin_vllm.plan": ("delay_iterations", "max_iterations", "plan_for"),
        "profwin_vllm.session": ("session",),
        "profwin_vllm.targets": ("VllmEngine", "VllmServer"),
        "profwin_vllm.traces": ("STEP_ANNOTATION", "TraceFile", "proton_artifacts", "session_artifacts"),
        "profwin_vllm.versions": (
            "CONFIG_FIELDS",
            "DISTRIBUTIONS",
            "NEWEST_KNOWN",
            "Mechanism",
            "body_fields",
            "config_fields",
            "mechanism",
            "profiler_kinds",
            "resolve_version",
            "start_keywords",
        ),
    },
)
