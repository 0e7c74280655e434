"""Reaching engines: the HTTP client and remote sessions (a backend's targets, a trainer
integration's engines, a cluster's actors). Imported only by the modules that talk to an engine:
it brings ``asyncio`` and ``http.client``.

- the HTTP client: :class:`ServerClient` (a server's URL, API key and timeout given once),
  :func:`request` (total deadline, body cap, no redirects, never raises for the network),
  :class:`Reply`, :func:`normalize_url`;
- remote sessions: :func:`remote_session`, :class:`RemoteSession`, :class:`OnActive`,
  :class:`SessionError`, :func:`session_function`, :func:`is_session_prefix`, and
  :func:`folder_listing` (what a session lists to find an engine's new files: a target whose
  engine writes on another machine lists them there with it, see
  :class:`~profwin.plugin.engines.EngineTarget`).
"""

from profwin.runtime.http import Reply as Reply
from profwin.runtime.http import ServerClient as ServerClient
from profwin.runtime.http import normalize_url as normalize_url
from profwin.runtime.http import request as request
from profwin.runtime.remote import OnActive as OnActive
from profwin.runtime.remote import RemoteSession as RemoteSession
from profwin.runtime.remote import SessionError as SessionError
from profwin.runtime.remote import folder_listing as folder_listing
from profwin.runtime.remote import is_session_prefix as is_session_prefix
from profwin.runtime.remote import remote_session as remote_session
from profwin.runtime.remote import session_function as session_function

# The names above are the surface: listed once, as its imports.
__all__ = sorted(name for name in dir() if not name.startswith("_"))
