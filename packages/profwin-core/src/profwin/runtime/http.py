"""profwin's one HTTP client (standard library only): how every plugin talks to an engine's server.

How it works, and why: docs/internals.md, ``profwin.runtime.http``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import re
import socket
import ssl
import threading
from collections.abc import Mapping
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from attrs import field, frozen

from profwin.about import __version__
from profwin.arguments import checked
from profwin.errors import ConfigError, shown

# The deadline and URL rules, here for the client's callers (they live with the inputs, so that a
# caller can check them without importing http.client, ssl and socket).
from profwin.inputs import MAX_TIMEOUT, MAX_URL_CHARS, check_timeout, normalize_url

__all__ = ["MAX_TIMEOUT", "MAX_URL_CHARS", "Reply", "ServerClient", "check_timeout", "normalize_url", "request"]

_API_KEY_HINT = " (the server wants an API key: pass --api-key, $PROFWIN_API_KEY or api_key=)"
_DETAIL_LIMIT = 2000
_CHUNK = 1 << 16
_S = TypeVar("_S", bound=socket.socket)


@frozen
class Reply:
    """One HTTP exchange, successful or not.

    Attributes:
        method: the HTTP method sent.
        url: the full URL requested (never with credentials: :func:`normalize_url` refuses them).
        status: the HTTP status, or ``None`` when no HTTP answer came (``error`` says why).
        data: the decoded JSON body, or ``None`` when the body is empty or not JSON.
        text: the body as text (UTF-8, undecodable bytes replaced), at most ``max_body`` bytes of it.
        error: ``""``, or why the exchange failed below HTTP's status: no connection, no complete
            answer before the deadline, a body over the cap, JSON that is not what was expected.
        location: the ``Location`` of a 3xx answer (redirects are never followed).
        server: the server's URL the request went under (``url`` without the route), normalized.
    """

    method: str
    url: str
    status: int | None
    data: Any = None
    text: str = ""
    error: str = ""
    location: str | None = None
    server: str = ""

    @property
    def ok(self) -> bool:
        """A 2xx status and no error."""
        return self.status is not None and 200 <= self.status < 300 and not self.error

    @property
    def detail(self) -> str:
        """The server's message: FastAPI's ``detail``, an OpenAI-style ``error.message``, an
        ``error`` string, or else the body text (at most 2000 characters)."""
        message = self.text.strip()
        if isinstance(self.data, Mapping):
            detail, error = self.data.get("detail"), self.data.get("error")
            if "detail" in self.data:
                message = detail if isinstance(detail, str) else json.dumps(detail)
            elif isinstance(error, Mapping) and "message" in error:
                message = str(error["message"])
            elif isinstance(error, str):
                message = error
        return message[:_DETAIL_LIMIT]

    def describe(self) -> str:
        """One line for users, e.g. ``POST http://h:30000/start_profile returned 409: <detail>``."""
        head = f"{self.method} {self.url}"
        if self.status is None:
            return f"{head} failed: {self.error}"
        if 300 <= self.status < 400:
            where = f"to {self.location}" if self.location else "without a Location"
            return f"{head} redirected ({self.status}) {where}: not followed (profwin sends requests only to the URL given; pass the final URL)"
        if self.error:
            return f"{head} returned {self.status}, but {self.error}"
        detail = " ".join(self.detail.split())
        hint = f" ({misaddressed})" if (misaddressed := self.misaddressed) else _API_KEY_HINT if self.status in (401, 403) else ""
        return f"{head} returned {self.status}" + (f": {detail}" if detail else "") + hint

    @property
    def misaddressed(self) -> str:
        """For a refusal (401, 403, 404, 405) under a server URL whose path ends in ``/v1`` (an
        OpenAI client's base URL), the URL to give instead, in a sentence; else ``""``. Why:
        docs/internals.md, ``profwin.runtime.http``."""
        if self.status not in (401, 403, 404, 405) or urlsplit(self.server).path.lower().rpartition("/")[2] != "v1":
            return ""
        return f"{self.server} ends in /v1, an OpenAI client's base URL: give the server's own URL, {self.server[:-3]}"


@checked
def request(
    url: str,
    path: str,
    *,
    method: str = "POST",
    body: Mapping[str, Any] | None = None,
    api_key: str | None = None,
    timeout: float = 30.0,
    max_body: int = 1 << 20,
    expect: Literal["object", "any"] = "any",
) -> Reply:
    """Send ``method url+path`` (``body`` as JSON) and return the answer within ``timeout`` seconds.

    Never raises for the network (see the module's rules); raises :class:`~profwin.ConfigError`
    for a bad ``url``, ``path``, ``body`` (NaN or not JSON), ``api_key``, ``timeout``,
    ``max_body`` or ``expect``. With ``expect="object"`` a 2xx answer that is not a JSON object
    is an error; any JSON answer declared as JSON must parse.
    """
    base = normalize_url(url)
    _check_arguments(path, api_key, timeout, max_body, expect)
    headers = {"Accept": "application/json", "User-Agent": f"profwin/{__version__}", "Connection": "close"}
    payload = None
    if body is not None:
        payload = _encode(body)
        headers["Content-Type"] = "application/json"
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    parts = urlsplit(base)
    host, tls = parts.hostname or "", parts.scheme == "https"
    connection_class = http.client.HTTPSConnection if tls else http.client.HTTPConnection
    conn = connection_class(host, parts.port, timeout=timeout)
    held = _Held()
    watchdog = threading.Timer(timeout, held.expire)
    watchdog.daemon = True
    status: int | None = None
    location = content_type = None
    answer: http.client.HTTPResponse | None = None
    raw = b""
    error = ""
    try:
        watchdog.start()
        conn.sock = held.connect(host, conn.port, timeout, tls=tls)
        conn.request(method, parts.path + path, payload, headers)
        answer = conn.getresponse()
        if not held.expired:  # else the watchdog cut the headers short: they are not an answer
            status, content_type = answer.status, answer.getheader("Content-Type", "")
            location = answer.getheader("Location") if 300 <= status < 400 else None
            raw = _read_capped(answer, max_body)
            if answer.length and len(raw) <= max_body:  # http.client does not raise for a short body
                error = f"the server closed the connection mid-answer ({answer.length} bytes missing)"
    except (OSError, http.client.HTTPException, UnicodeError) as exc:
        if isinstance(exc, TimeoutError):  # the socket's own timeout: the same deadline, met first
            held.expired = True
        error = _why(exc, host)
    finally:
        watchdog.cancel()
        held.finish()  # before closing: the watchdog must never shut a descriptor reused since
        if answer is not None:
            answer.close()
        conn.close()
        held.close()
    if held.expired:
        error = f"did not answer within {timeout:g} s (no complete answer)"
    elif len(raw) > max_body:
        error = f"answer larger than {max_body} bytes"
    ok_status = status is not None and 200 <= status < 300
    data, text, problem = _decode(raw[:max_body], content_type or "", expect if ok_status and not error else None)
    return Reply(method, base + path, status, data, text, error or problem, location, base)


def _check_arguments(path: str, api_key: str | None, timeout: float, max_body: int, expect: str) -> None:
    if not isinstance(path, str) or not re.fullmatch(r"(/[!-~]*)?", path):
        raise ConfigError(
            f"must be empty or start with '/', without spaces or control characters (got {shown(path)})", path="path"
        )
    if api_key is not None and not (isinstance(api_key, str) and re.fullmatch(r"[!-~]*", api_key)):
        raise ConfigError("must be a string of printable ASCII characters without spaces (the key is not shown)", path="api_key")
    check_timeout(timeout)
    if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body <= 0:
        raise ConfigError(f"must be a positive number of bytes (got {shown(max_body)})", path="max_body")
    if expect not in ("object", "any"):
        raise ConfigError(f"must be 'object' or 'any' (got {shown(expect)})", path="expect")


def _encode(body: Mapping[str, Any]) -> bytes:
    try:
        return json.dumps(dict(body), allow_nan=False).encode()
    except ValueError as exc:  # NaN or infinity (JSON has neither), or a circular structure
        found = _non_finite(body, "body", ())
        if found is None:
            raise ConfigError(f"cannot be sent as JSON: {exc}", path="body") from None
        raise ConfigError(
            f"must be a finite number; JSON has no NaN or infinity (got {shown(found[1])})", path=found[0]
        ) from None
    except TypeError as exc:
        raise ConfigError(f"cannot be sent as JSON: {exc}", path="body") from None


def _non_finite(value: Any, path: str, parents: tuple[int, ...]) -> tuple[str, float] | None:
    """The path and value of the first NaN or infinity in ``value`` (``parents`` stops cycles)."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, value
    if id(value) in parents:
        return None
    if isinstance(value, Mapping):
        items = [(f"{path}.{key}", item) for key, item in value.items()]
    elif isinstance(value, (list, tuple)):
        items = [(f"{path}[{i}]", item) for i, item in enumerate(value)]
    else:
        return None
    for item_path, item in items:
        if found := _non_finite(item, item_path, (*parents, id(value))):
            return found
    return None


class _Held:
    """The sockets of one exchange, held from connect to the end whatever ``http.client`` does
    with them, so the watchdog can always shut the connection down (see the module's rules)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._done = False
        self.expired = False

    def connect(self, host: str, port: int, timeout: float, *, tls: bool) -> socket.socket:
        """A connected socket (TLS-wrapped and handshaken when ``tls``), held at every stage."""
        sock = self._hold(socket.create_connection((host, port), timeout))
        if tls:
            context = ssl.create_default_context()
            wrapped = self._hold(context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False))
            wrapped.do_handshake()
            return wrapped
        return sock

    def _hold(self, sock: _S) -> _S:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:  # the deadline passed while connecting
                self._shut(sock)
        return sock

    def expire(self) -> None:
        """The watchdog: at the deadline, wake whatever read or write the exchange is blocked in."""
        with self._lock:
            if self._done:
                return
            self.expired = True
            for sock in self._sockets:
                self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):  # already closed, or detached by the TLS wrapper
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the plain socket's: works under TLS too

    def finish(self) -> None:
        """The exchange is over: the watchdog may no longer touch these sockets."""
        with self._lock:
            self._done = True

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


def _read_capped(answer: http.client.HTTPResponse, max_body: int) -> bytes:
    """At most ``max_body + 1`` bytes of the body: one more than allowed says it was too large."""
    chunks: list[bytes] = []
    size = 0
    while size <= max_body and (chunk := answer.read(min(_CHUNK, max_body + 1 - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _why(exc: BaseException, host: str) -> str:
    if isinstance(exc, (socket.gaierror, UnicodeError)):
        return f"cannot resolve host {host!r}: {exc}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed: {exc}"
    if isinstance(exc, ConnectionRefusedError):
        return "cannot reach the server: connection refused (is it running, on this port?)"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(exc, ConnectionResetError):
        return "the server reset the connection"
    if isinstance(exc, http.client.IncompleteRead):
        return f"the server closed the connection mid-answer ({exc.expected} bytes missing)"
    if isinstance(exc, http.client.BadStatusLine):
        return f"not an HTTP answer (got {str(exc)[:100]!r})"
    if isinstance(exc, http.client.HTTPException):
        return f"not a valid HTTP answer: {exc}"
    return f"connection failed: {exc}"


def _decode(raw: bytes, content_type: str, expect: str | None) -> tuple[Any, str, str]:
    """``(data, text, error)`` of a body; ``expect`` is ``None`` when the exchange already failed."""
    text = raw.decode("utf-8", "replace")
    try:
        data, why = (json.loads(text) if text.strip() else None), ""
    except (ValueError, RecursionError) as exc:
        data, why = None, f"{exc} (got {text[:100]!r})"
    if expect is None:
        return data, text, ""
    declared = re.fullmatch(r"application/([\w.-]+\+)?json", content_type.partition(";")[0].strip().lower())
    if why and (declared or expect == "object"):
        return None, text, f"answer is not a JSON object: {why}"
    if expect == "object" and not isinstance(data, dict):
        got = f"a JSON {type(data).__name__} {text[:100]!r}" if text.strip() else "an empty body"
        return data, text, f"answer is not a JSON object: got {got}"
    return data, text, ""


def _server_url(url: str) -> str:
    """:func:`normalize_url` as a converter (mypy's attrs plugin takes no decorated function as one)."""
    return normalize_url(url)


@checked
@frozen
class ServerClient:
    """One engine server as a backend talks to it: the URL (normalized once), the bearer token and
    the per-request timeout, given once and used by every :meth:`call`.

    Backends' server targets hold one instead of carrying the three values to each request.
    """

    url: str = field(converter=_server_url)
    api_key: str | None = field(default=None, repr=False)  # never in logs or reprs
    timeout: float = field(default=30.0, converter=check_timeout)

    def call(
        self,
        path: str,
        *,
        method: str = "POST",
        body: Mapping[str, Any] | None = None,
        expect: Literal["object", "any"] = "any",
    ) -> Reply:
        """:func:`request` to this server (never raises for the network; see the module's rules)."""
        return request(self.url, path, method=method, body=body, api_key=self.api_key, timeout=self.timeout, expect=expect)
