"""The engine runtime: what runs a window on live engines, from outside them and inside them.

- :mod:`profwin.runtime.remote`: one remote session for every engine (start, stop, collect), and
  the state ``profwin start`` leaves for ``profwin stop``;
- :mod:`profwin.runtime.router`: engines behind a router, its ``GET /workers`` as the targets;
- :mod:`profwin.runtime.http`: the one HTTP client every plugin talks to an engine's server with;
- :mod:`profwin.runtime.processes`: the processes that serve a URL on this machine;
- :mod:`profwin.runtime.versions`: engine versions, one type for every backend;
- :mod:`profwin.runtime.tokens`: the one token-window rule an engine plugin applies inside the engine,
  and how a token window travels in an engine's own start fields;
- :mod:`profwin.runtime.timeline_record`: the session timeline, recorded inside the engine.

The engine API these serve (:class:`~profwin.EnginePlan`, the ``Backend`` protocol) is
:mod:`profwin.engine`, a contract beside the other plugin protocols. Users reach the runtime
through :mod:`profwin`, plugins through :mod:`profwin.plugin.engines` and
:mod:`profwin.plugin.remote`; nothing here is imported by ``import profwin``.
"""
