"""Engines behind a router: the router's ``GET /workers`` names the servers to profile.

::

    with profwin.remote_session("sglang", profwin.router("http://router:30000"), "20:80") as s:
        run_rollout()

:func:`router` asks the router once and returns its workers as a tuple of URLs, so everything a
URL list gets applies unchanged (concurrent start, rollback, restart, per-worker results). The
answers understood (each checked against the real router from the registry):

- ``{"workers": [{"url": ..., "worker_type": ..., "is_healthy": ...}, ...], "total": N}``:
  sglang-router 0.2.x and 0.3.x, vllm-router 0.1.x;
- ``{"urls": [...]}`` from ``GET /list_workers``: older sglang-routers that have no
  ``/workers``, and vllm-router beside ``/workers``. It is asked only when ``/workers`` is 404.

``profwin start --router URL`` and ``profwin stop --router URL`` are two processes and the
router's list may change between them: :func:`start_router` records the workers it started, and
:func:`stop_router` stops exactly those (also one that has left the router since, at its URL),
and reports a worker that joined after the start without touching it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from profwin.errors import ConfigError, shown
from profwin.http import check_timeout, normalize_url, request
from profwin.protocols import RemoteResult
from profwin.remote import STATE_DIR, start_remote, stop_remote
from profwin.spec import ProfileSpec

__all__ = ["RouterError", "RouterWorkers", "against_router", "router", "start_router", "stop_router"]


class RouterError(ConfigError):
    """The router could not be asked for its workers, or its answer is not a worker list."""


class RouterWorkers(tuple[str, ...]):
    """The workers a router listed: a tuple of their URLs (what :func:`profwin.remote_session`
    takes), with the router's URL (:attr:`router`) and each worker's entry as the router gave it
    (:attr:`entries`, same order: ``worker_type``, ``is_healthy``, ``model_id`` where it says)."""

    router: str
    entries: tuple[Mapping[str, Any], ...]

    def __new__(cls, urls: Iterable[str], *, router: str, entries: Iterable[Mapping[str, Any]] = ()) -> RouterWorkers:
        self = super().__new__(cls, tuple(urls))
        self.router = router
        self.entries = tuple(entries)
        return self

    def __repr__(self) -> str:
        return f"RouterWorkers({list(self)!r}, router={self.router!r})"


def router(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> RouterWorkers:
    """The workers the router at ``url`` lists now (its ``GET /workers``, or ``GET /list_workers``
    on routers without it). Raises :class:`RouterError` when the router cannot be reached, answers
    with an error, lists something that is not a worker URL, or lists no worker."""
    base = normalize_url(url)
    timeout = check_timeout(timeout)
    reply = request(base, "/workers", method="GET", api_key=api_key, timeout=timeout, expect="object")
    if reply.status == 404:
        reply = request(base, "/list_workers", method="GET", api_key=api_key, timeout=timeout, expect="object")
    if not reply.ok:
        raise RouterError(f"cannot list the router's workers: {reply.describe()}", path="router")
    urls, entries = _workers(reply.data, reply.url)
    if not urls:
        raise RouterError(f"{reply.url} lists no worker (got {shown(reply.text, limit=200)})", path="router")
    return RouterWorkers(urls, router=base, entries=entries)


def _workers(data: Mapping[str, Any], where: str) -> tuple[list[str], list[Mapping[str, Any]]]:
    """Worker URLs and entries from a ``/workers`` or ``/list_workers`` answer."""
    if isinstance(data.get("workers"), list):
        entries = data["workers"]
        key = "workers"
    elif isinstance(data.get("urls"), list):
        entries = [{"url": u} for u in data["urls"]]
        key = "urls"
    else:
        raise RouterError(
            f"{where} answered without a 'workers' or 'urls' list (got keys {sorted(data)}); "
            "profwin understands sglang-router 0.2/0.3 and vllm-router 0.1 answers",
            path="router",
        )
    urls: list[str] = []
    for i, entry in enumerate(entries):
        raw = entry.get("url") if isinstance(entry, Mapping) else None
        if not isinstance(raw, str):
            raise RouterError(f"{where}: {key}[{i}] has no 'url' string (got {shown(entry)})", path="router")
        try:
            worker = normalize_url(raw)
        except ConfigError as exc:
            raise RouterError(f"{where}: {key}[{i}].url {exc.reason}", path="router") from None
        if worker not in urls:  # one server listed twice (a prefill and a decode role) is profiled once
            urls.append(worker)
    return urls, [e for e in entries if isinstance(e, Mapping)]


# -- profwin start / stop --router: two processes ------------------------------------------------


def _state_file(engine: str, router_url: str, spec: ProfileSpec) -> Path:
    slug = "".join(c if c.isalnum() else "_" for c in router_url.split("://", 1)[-1])[:100]
    return spec.output_dir / STATE_DIR / f"router-{engine}-{slug}.json"


def start_router(engine: str, router_url: str, spec: ProfileSpec, **kwargs: Any) -> list[RemoteResult]:
    """``profwin start --router URL``: start on every worker the router lists, and record which
    ones started (beside the per-worker state) for :func:`stop_router`."""
    workers = router(router_url, api_key=kwargs.get("api_key"), timeout=kwargs.get("timeout", 30.0))
    results = start_remote(engine, list(workers), spec, **kwargs)
    path = _state_file(engine, workers.router, spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"router": workers.router, "workers": list(workers), "started": [r.target for r in results if r.ok]}
    path.write_text(json.dumps(state))
    return [_tagged(r, "listed") for r in results]


def stop_router(engine: str, router_url: str, spec: ProfileSpec, **kwargs: Any) -> list[RemoteResult]:
    """``profwin stop --router URL``: stop the workers :func:`start_router` started, wherever the
    router's list has moved since. A worker that left the router is still stopped at its URL; a
    worker that joined after the start is reported (not ok: it holds no window) and left alone.
    Without the start's record, every worker the router lists now is stopped without collecting."""
    base = normalize_url(router_url)
    path = _state_file(engine, base, spec)
    try:
        state = json.loads(path.read_text())
        started = [str(u) for u in state["started"]]
    except FileNotFoundError:
        return stop_remote(
            engine, list(router(base, api_key=kwargs.get("api_key"), timeout=kwargs.get("timeout", 30.0))), spec, **kwargs
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RouterError(
            f"the state file {path} is damaged ({type(exc).__name__}: {exc}); stop the workers with --url", path="router"
        ) from None
    stopped = stop_remote(engine, started, spec, **kwargs) if started else []
    results = against_router(
        stopped, started, base, api_key=kwargs.get("api_key"), timeout=kwargs.get("timeout", 30.0), since="profwin start"
    )
    os.unlink(path)
    return results


def against_router(
    results: Sequence[RemoteResult],
    started: Sequence[str],
    router_url: str,
    *,
    api_key: str | None = None,
    timeout: float = 30.0,
    since: str = "the start",
) -> list[RemoteResult]:
    """The stop's ``results`` (one per worker in ``started``) compared with what the router lists
    now, each tagged in ``details.router``: ``listed``, ``left`` (stopped at its URL all the same)
    or ``unknown`` (the router could not be asked); a worker listed now that was not started gets
    a result of its own, not ok, ``joined``: no window ran on it. ``since`` names the start in
    the messages (``profwin start``, ``the rollout's start``)."""
    try:
        now: list[str] | None = list(router(router_url, api_key=api_key, timeout=timeout))
        unreachable = ""
    except RouterError as exc:
        now, unreachable = None, str(exc)
    tagged = [_left(r, now, unreachable, since) for r in results]
    for url in now or ():
        if url not in started:
            message = f"joined the router after {since} (or did not start): no window was started on it, left alone"
            tagged.append(RemoteResult(target=url, ok=False, message=message, details={"router": "joined"}))
    return tagged


def _tagged(result: RemoteResult, how: str, note: str = "") -> RemoteResult:
    message = result.message + (f"; {note}" if note else "")
    return RemoteResult(
        target=result.target, ok=result.ok, message=message, artifacts=result.artifacts, details={**result.details, "router": how}
    )


def _left(result: RemoteResult, now: Sequence[str] | None, unreachable: str, since: str) -> RemoteResult:
    if now is None:
        return _tagged(result, "unknown", f"the router could not be asked ({unreachable}); stopped at the URL {since} used")
    if result.target in now:
        return _tagged(result, "listed")
    return _tagged(result, "left", f"left the router after {since}; stopped at its URL")
