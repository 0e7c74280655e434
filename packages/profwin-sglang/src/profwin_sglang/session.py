"""``profwin_sglang.session``: profile a session-relative window on live SGLang servers.

::

    with profwin_sglang.session("http://127.0.0.1:30000", spec) as s:
        send_rollout_requests()          # step 0 is the first batch after the start request
    s.artifacts                          # this session's trace files and the steps they hold

A thin wrapper over :func:`profwin.remote_session` with the ``sglang`` backend. Start: read each
server's version, device and whether the profwin-sglang server plugin answers; choose a plan
(:mod:`profwin_sglang.window`); send ``/start_profile`` with this session's own ``profile_id``.
Stop: ``/stop_profile``, which writes the trace if the profiler is still recording (SGLang's
auto-stop only fires when the batch *after* the window runs); disarm a window never reached;
collect the files, trim them in ``trim`` mode, and say which steps each holds.
"""

from __future__ import annotations

from profwin.plugin.remote import session_function
from profwin_sglang.backend import SglangBackend

__all__ = ["session"]

session = session_function(
    SglangBackend(),
    """A profiling session for ``spec``'s window on ``target``: an ``sglang.Engine``, a server URL,
or a list of URLs (driven concurrently). ``spec`` may be a :class:`~profwin.ProfileSpec`, a
:class:`~profwin.Window` or text like ``"20:80"``.

``version`` overrides the version the server reports; ``api_key`` is sent as a bearer token
(SGLang's ``--admin-api-key`` or ``--api-key``); ``timeout`` bounds every call, in seconds;
``on_active="restart"`` stops a session someone else left running and starts again.
""",
)
