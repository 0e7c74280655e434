"""HTTP to vLLM servers with the standard library only, so the plugin needs nothing but profwin-core.

Every call has a timeout and returns a :class:`Reply` instead of raising: one server failing must
not hide the others' results when a session fans out to several.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from attrs import frozen

__all__ = ["Reply", "normalize_url", "request"]


@frozen
class Reply:
    """One HTTP exchange.

    Attributes:
        status: the HTTP status, or ``None`` when no answer came (``error`` says why).
        detail: the server's message: FastAPI's ``detail``, an OpenAI-style ``error.message``,
            or the body text.
        data: the decoded JSON body, if it was JSON.
        error: why there is no status (connection refused, timeout, ...).
    """

    status: int | None
    detail: str = ""
    data: Any = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def normalize_url(url: str) -> str:
    """``"127.0.0.1:8000/"`` -> ``"http://127.0.0.1:8000"``."""
    url = url.strip().rstrip("/")
    return url if "://" in url else f"http://{url}"


def _detail(data: Any, text: str) -> str:
    if isinstance(data, Mapping):
        if "detail" in data:
            detail = data["detail"]
            return detail if isinstance(detail, str) else json.dumps(detail)
        error = data.get("error")
        if isinstance(error, Mapping) and "message" in error:
            return str(error["message"])
        if isinstance(error, str):
            return error
    return text.strip()[:2000]


def _decode(raw: bytes) -> tuple[Any, str]:
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text), text
    except ValueError:
        return None, text


def request(
    url: str,
    path: str,
    *,
    method: str = "POST",
    body: Mapping[str, Any] | None = None,
    api_key: str | None = None,
    timeout: float,
) -> Reply:
    """Send one request to ``url + path`` and wait at most ``timeout`` seconds for the answer."""
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(dict(body)).encode()
        headers["Content-Type"] = "application/json"
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(normalize_url(url) + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            parsed, text = _decode(resp.read())
            return Reply(resp.status, _detail(parsed, text), parsed)
    except urllib.error.HTTPError as exc:
        parsed, text = _decode(exc.read() or b"")
        return Reply(exc.code, _detail(parsed, text) or str(exc.reason), parsed)
    except TimeoutError:
        return Reply(None, error=f"no answer within {timeout:g} s")
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, (TimeoutError, socket.timeout)):
            return Reply(None, error=f"no answer within {timeout:g} s")
        return Reply(None, error=f"cannot connect: {exc.reason}")
    except (ConnectionError, OSError) as exc:
        return Reply(None, error=f"connection failed: {exc}")
