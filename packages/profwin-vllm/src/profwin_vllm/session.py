"""``profwin_vllm.session``: profile one window of an ``LLM``, an ``AsyncLLM`` or running servers.

::

    with profwin_vllm.session(llm, spec) as s:          # or: async with ... (AsyncLLM, URLs)
        llm.generate(prompts, params)
    s.artifacts                                           # this session's traces, with their steps

A thin wrapper over :func:`profwin.remote_session` with the ``vllm`` backend: on entry it starts
vLLM's profiler with the window (per session on vLLM ≥ 0.32; on 0.13–0.31 it checks that the
engine was launched with the window's config); on exit it always calls ``stop_profile`` and
collects the traces, errors included.
"""

from __future__ import annotations

from profwin.plugin.remote import session_function
from profwin_vllm.backend import VllmBackend

__all__ = ["session"]

session = session_function(
    VllmBackend(),
    """A :class:`profwin.RemoteSession` (``with`` or ``async with``) profiling ``spec.window`` on ``target``.

Args:
    target: a ``vllm.LLM``, a ``vllm.v1.engine.async_llm.AsyncLLM`` (``async with`` only), a
        server URL, or a list of URLs (started and stopped concurrently).
    spec: a :class:`profwin.ProfileSpec`, or just the window (``"20:80"``).
    version: the vLLM version, for servers that cannot be asked (``GET /version``).
    api_key: bearer token for servers started with ``--api-key``.
    timeout: seconds for each request (a total deadline).
    on_active: a server or engine already profiling is an ``"error"``, or is stopped and
        started again (``"restart"``).
""",
)
