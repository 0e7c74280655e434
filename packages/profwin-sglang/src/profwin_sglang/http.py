"""A small HTTP client for SGLang's control endpoints (stdlib only), with a timeout on every call.

SGLang's ``/start_profile`` has hung forever (DP attention, SGLang #22083), so nothing here waits
without a limit; a timeout becomes :class:`ServerTimeout` with the URL and what to do.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from attrs import frozen

__all__ = ["Reply", "ServerError", "ServerTimeout", "call", "normalize_url"]


class ServerError(RuntimeError):
    """An SGLang server could not be reached or answered with an error status."""

    def __init__(self, message: str, *, url: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.status = status
        self.body = body


class ServerTimeout(ServerError):
    """An SGLang server did not answer within the timeout."""


@frozen
class Reply:
    status: int
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def normalize_url(url: str) -> str:
    """``host:port`` or ``http://host:port/`` -> ``http://host:port``."""
    url = url.strip().rstrip("/")
    return url if "://" in url else f"http://{url}"


def call(
    url: str,
    path: str,
    *,
    body: dict[str, Any] | None = None,
    method: str = "POST",
    api_key: str | None = None,
    timeout: float,
) -> Reply:
    """``method`` ``url + path`` with a JSON ``body``; any status >= 400 raises :class:`ServerError`."""
    target = normalize_url(url) + path
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(target, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if api_key:
        # SGLang's admin endpoints take the (admin) API key as a bearer token.
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return Reply(response.status, response.read().decode(errors="replace"))
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")
        hint = " (wrong or missing API key? pass api_key / --api-key)" if exc.code in (401, 403) else ""
        raise ServerError(
            f"{method} {target} answered HTTP {exc.code}{hint}: {_short(text)}", url=url, status=exc.code, body=text
        ) from None
    except TimeoutError as exc:
        raise ServerTimeout(f"{method} {target} did not answer within {timeout:g} s", url=url) from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise ServerTimeout(f"{method} {target} did not answer within {timeout:g} s", url=url) from exc
        raise ServerError(f"cannot reach {target}: {exc.reason}", url=url) from exc
    except (ConnectionError, OSError) as exc:  # reset or refused mid-request
        raise ServerError(f"cannot reach {target}: {exc}", url=url) from exc


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
