"""Engines behind a router: the router's ``GET /workers`` names the servers to profile.

How it works, and why: docs/internals.md, ``profwin.runtime.router``.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from profwin.errors import ConfigError, shown
from profwin.formats import Format
from profwin.protocols import RemoteResult
from profwin.runtime.http import check_timeout, normalize_url, request
from profwin.runtime.remote import read_state, start_remote, state_path, stop_remote
from profwin.spec import ProfileSpec

__all__ = [
    "MAX_WORKERS_ANSWER_BYTES",
    "RECORD_FORMAT",
    "RouterError",
    "RouterWorkers",
    "against_router",
    "router",
    "start_router",
    "stop_router",
]

MAX_WORKERS_ANSWER_BYTES = 1 << 20
"""Largest ``/workers`` or ``/list_workers`` answer read (1 MiB, some 5,000 workers); a larger one
is a :class:`RouterError`."""
RECORD_FORMAT = Format("profwin.runtime.router-state", version=2)
"""``profwin start --router``'s record: ``router``, ``workers``, ``started``, ``keyed`` (version 1:
the same without ``"format"``)."""


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
    cap = MAX_WORKERS_ANSWER_BYTES
    reply = request(base, "/workers", method="GET", api_key=api_key, timeout=timeout, expect="object", max_body=cap)
    if reply.status == 404:
        reply = request(base, "/list_workers", method="GET", api_key=api_key, timeout=timeout, expect="object", max_body=cap)
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
    return state_path(spec, f"router-{engine}", router_url)


def start_router(engine: str, router_url: str, spec: ProfileSpec, **kwargs: Any) -> list[RemoteResult]:
    """``profwin start --router URL``: start on every worker the router lists, and record which
    ones started (beside the per-worker state) for :func:`stop_router`; the record is part of the
    start's all or none (:func:`profwin.runtime.remote.start_remote`)."""
    workers = router(router_url, api_key=kwargs.get("api_key"), timeout=kwargs.get("timeout", 30.0))

    def record(results: list[RemoteResult]) -> dict[str, Any]:
        started = [r.target for r in results if r.ok]
        return RECORD_FORMAT.stamp(
            {
                "router": workers.router,
                "workers": list(workers),
                "started": started,
                "keyed": _key_tags(started, kwargs.get("api_key")),
            }
        )

    results = start_remote(engine, list(workers), spec, record=(_state_file(engine, workers.router, spec), record), **kwargs)
    return [_tagged(r, "listed") for r in results]


def stop_router(engine: str, router_url: str, spec: ProfileSpec, **kwargs: Any) -> list[RemoteResult]:
    """``profwin stop --router URL``: stop the workers :func:`start_router` started, wherever the
    router's list has moved since. A worker that left the router is still stopped at its URL; a
    worker that joined after the start is reported (not ok: it holds no window) and left alone.
    Without the start's record (or with one that is damaged), every worker the router lists now
    is stopped.

    The record is read like every state file (:func:`profwin.runtime.remote.read_state`: at most
    :data:`~profwin.runtime.remote.MAX_STATE_BYTES`, a regular file, versioned, typed, for this router),
    and no file chooses where the API key goes: it is sent to the workers the router lists now,
    and to a worker only the record names (it left the router, or the router cannot be asked)
    only when the record holds that URL's tag under this same key (an HMAC the start wrote,
    which nobody without the key can write for another host); otherwise that worker is stopped
    without the key, and the result says so."""
    base = normalize_url(router_url)
    api_key, timeout = kwargs.get("api_key"), kwargs.get("timeout", 30.0)
    path = _state_file(engine, base, spec)
    damaged = ""
    started: list[str] | None = None
    at_start: list[str] = []
    tags: dict[str, str] = {}
    if os.path.lexists(path):
        try:
            started, tags, at_start = _read_record(path, base)
        except (ConfigError, OSError) as exc:
            why = " ".join((str(exc) if isinstance(exc, ConfigError) else f"cannot read it: {exc.strerror or exc}").split())[:300]
            damaged = (
                f"profwin start's record {path} is damaged or not profwin's ({why}); stopped the workers the router lists now"
            )
    if started is None:
        results = stop_remote(engine, list(router(base, api_key=api_key, timeout=timeout)), spec, **kwargs)
        _forget(path)
        return [_tagged(r, "listed", damaged) for r in results]
    now, unreachable = _listed_now(base, api_key, timeout)
    listed = [u for u in started if now is not None and u in now]
    proven = _key_tags(started, api_key)
    keyed = [u for u in started if u in listed or (u in proven and hmac.compare_digest(proven[u], tags.get(u, "")))]
    keyless = [u for u in started if u not in keyed]
    stopped: dict[str, RemoteResult] = {}
    if keyed:
        stopped.update((r.target, r) for r in stop_remote(engine, keyed, spec, **kwargs))
    if keyless:
        stopped.update((r.target, r) for r in stop_remote(engine, keyless, spec, **{**kwargs, "api_key": None}))
    note = (
        "; the API key was not sent to it (only profwin start's record names it now, without its tag under this key)"
        if api_key
        else ""
    )
    results = [
        _left(stopped[url], now, unreachable, "profwin start", note if url in keyless else "") for url in started
    ] + _joined(started, now, "profwin start", at_start)
    if not any(r.details.get("differs") for r in results):  # else kept for the stop with the start's arguments
        _forget(path)
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
    now, unreachable = _listed_now(router_url, api_key, timeout)
    return _compare(results, started, now, unreachable, since)


def _listed_now(router_url: str, api_key: str | None, timeout: float) -> tuple[list[str] | None, str]:
    """The router's workers now, or None and why it could not be asked."""
    try:
        return list(router(router_url, api_key=api_key, timeout=timeout)), ""
    except RouterError as exc:
        return None, str(exc)


def _compare(
    results: Sequence[RemoteResult], started: Sequence[str], now: Sequence[str] | None, unreachable: str, since: str
) -> list[RemoteResult]:
    return [_left(r, now, unreachable, since) for r in results] + _joined(started, now, since)


def _joined(started: Sequence[str], now: Sequence[str] | None, since: str, listed: Sequence[str] = ()) -> list[RemoteResult]:
    """A result for each worker listed ``now`` that was not started: it joined the router since,
    or (in ``listed``, the workers the router listed at the start, which started all or none but
    for the ones skipped) it was skipped at the start for a reason of its own, and is not a failure."""
    message = f"joined the router after {since} (or did not start): no window was started on it, left alone"
    skipped = f"skipped: it was left out at {since} (see that result: nothing was sent to it), left alone"
    return [
        RemoteResult(target=url, ok=False, message=skipped, details={"router": "listed", "skipped": True})
        if url in listed
        else RemoteResult(target=url, ok=False, message=message, details={"router": "joined"})
        for url in now or ()
        if url not in started
    ]


def _key_tags(urls: Iterable[str], api_key: str | None) -> dict[str, str]:
    """Each URL's tag under ``api_key`` (HMAC-SHA256): the record's proof that the start sent the
    key there. Nothing without a key."""
    if not api_key:
        return {}
    return {url: hmac.new(api_key.encode(), url.encode(), hashlib.sha256).hexdigest() for url in urls}


def _read_record(path: Path, base: str) -> tuple[list[str], dict[str, str], list[str]]:
    """The workers ``profwin start`` started, their key tags, and the workers the router listed
    then, from its record: at most :data:`~profwin.runtime.remote.MAX_STATE_BYTES`, a regular file, JSON
    within the spec bounds, for this router, with
    server URLs only."""
    data = read_state(path, RECORD_FORMAT, what="router state file")
    if set(data) != {"router", "workers", "started", "keyed"}:
        raise ConfigError("must be an object with exactly 'router', 'workers', 'started' and 'keyed'")
    if data["router"] != base:
        raise ConfigError(f"is for {shown(data['router'])}, not {base!r}", path="router")
    for key in ("workers", "started"):
        urls = data[key]
        if not isinstance(urls, list) or not all(_is_url(u) for u in urls):
            raise ConfigError(f"must be a list of server URLs (got {shown(urls)})", path=key)
    if not set(data["started"]) <= set(data["workers"]):
        raise ConfigError("names a worker the router did not list at the start", path="started")
    tags = data["keyed"]
    if not isinstance(tags, dict) or not all(isinstance(v, str) and k in data["started"] for k, v in tags.items()):
        raise ConfigError(f"must map started workers to their key tags (got {shown(tags)})", path="keyed")
    return list(dict.fromkeys(data["started"])), tags, list(dict.fromkeys(data["workers"]))


def _is_url(url: object) -> bool:
    try:
        return isinstance(url, str) and normalize_url(url) == url
    except ConfigError:
        return False


def _forget(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _tagged(result: RemoteResult, how: str, note: str = "") -> RemoteResult:
    message = result.message + (f"; {note}" if note else "")
    return RemoteResult(
        target=result.target, ok=result.ok, message=message, artifacts=result.artifacts, details={**result.details, "router": how}
    )


def _left(result: RemoteResult, now: Sequence[str] | None, unreachable: str, since: str, keyless: str = "") -> RemoteResult:
    """``keyless`` is said of a worker stopped without the API key (only a record named it, untagged)."""
    if now is None:
        note = f"the router could not be asked ({unreachable}); stopped at the URL {since} used{keyless}"
        return _tagged(result, "unknown", note)
    if result.target in now:
        return _tagged(result, "listed")
    return _tagged(result, "left", f"left the router after {since}; stopped at its URL{keyless}")
