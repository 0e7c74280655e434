"""Start and stop profiling sessions on running vLLM servers over HTTP, one or many at once.

Each server gets one :class:`~profwin.RemoteResult`; a server that fails never hides the others.
With several servers each gets its own file prefix (``<prefix>-<i>``), because servers on one
machine all write ``rank0`` traces and the prefix is what tells their files apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import profwin
from profwin.plugin_api import RemoteResult
from profwin.spec import ProfileSpec
from profwin_vllm.client import Reply, normalize_url, request
from profwin_vllm.settings import VllmSettings, render, settings_for
from profwin_vllm.traces import TraceFile, session_artifacts, trace_files
from profwin_vllm.versions import NEWEST_KNOWN, Mechanism, VllmVersion

__all__ = ["OnActive", "fan_out", "server_specs", "server_version", "start_server", "stop_server"]

OnActive = Literal["error", "restart"]
"""What to do when a server already has a profiling session: report it, or stop it and start again."""

_T = TypeVar("_T")
_U = TypeVar("_U")


def fan_out(call: Callable[[_T], _U], items: Sequence[_T]) -> list[_U]:
    """:func:`profwin.fan_out` with at most 16 servers in flight."""
    return profwin.fan_out(call, items, max_workers=16, thread_prefix="profwin-vllm")


def server_specs(spec: ProfileSpec, urls: Sequence[str]) -> list[ProfileSpec]:
    """One spec per server: the spec itself for one server, ``<prefix>-<i>`` for several."""
    if len(urls) <= 1:
        return [spec] * len(urls)
    return [spec.replace(prefix=f"{spec.prefix[: 127 - len(str(i))]}-{i}") for i in range(len(urls))]


def server_version(url: str, *, api_key: str | None, timeout: float) -> tuple[VllmVersion | None, str]:
    """Ask ``GET /version``; returns the version (``None`` if the server did not say) and a note."""
    reply = request(url, "/version", method="GET", api_key=api_key, timeout=timeout)
    if reply.status is None:
        return None, f"GET /version failed: {reply.error}"
    data = reply.data
    if reply.ok and isinstance(data, dict) and isinstance(data.get("version"), str):
        try:
            return VllmVersion.parse(data["version"]), "from GET /version"
        except ValueError:
            pass
    return None, f"GET /version gave no version (HTTP {reply.status}); assuming vLLM {NEWEST_KNOWN}"


def _plan(
    url: str, spec: ProfileSpec, version: str | None, api_key: str | None, timeout: float
) -> tuple[VllmSettings | None, str]:
    """The settings for this server and where its version came from; ``None`` and why when the
    server cannot be asked."""
    if version is not None:
        return settings_for(spec, VllmVersion.parse(version)), "given"
    found, note = server_version(url, api_key=api_key, timeout=timeout)
    if found is None and note.startswith("GET /version failed"):
        return None, note
    return settings_for(spec, found or NEWEST_KNOWN), note


def _relaunch_hint(settings: VllmSettings) -> str:
    if settings.profiler_config is not None:
        return "--profiler-config " + render(settings, "serve").splitlines()[0].split(" ", 1)[1]
    exports = render(settings, "env").splitlines()
    return "these environment variables: " + "; ".join(
        line.removeprefix("export ") for line in exports if line.startswith("export")
    )


def _failure(url: str, path: str, reply: Reply, settings: VllmSettings) -> str:
    """The message for a failed POST, saying what to do about it."""
    if reply.status is None:
        return f"POST {path} failed: {reply.error}"
    said = f"POST {path} returned {reply.status}"
    if reply.status == 404:
        return (
            f"{said}: this server was started without a profiler, so it has no profiling endpoints. "
            f"Relaunch it with {_relaunch_hint(settings)}"
        )
    if reply.status == 409:
        return (
            f"{said}: a profiling session is already active on this server ({reply.detail}). "
            f"Stop it with `profwin stop --engine vllm --url {url}`, or pass on_active='restart' to "
            "profwin_vllm.session to stop it and start again"
        )
    if reply.status == 400:
        return f"{said}: vLLM rejected the request: {reply.detail}"
    if reply.status in (401, 403):
        return f"{said} ({reply.detail}): the server wants an API key; pass --api-key, $PROFWIN_API_KEY or api_key="
    return f"{said}: {reply.detail}"


def _details(settings: VllmSettings, version_source: str, reply: Reply) -> dict[str, Any]:
    details: dict[str, Any] = {
        "version": str(settings.version),
        "version_source": version_source,
        "mechanism": settings.mechanism.value,
        "window": str(settings.window),
        "delay_iterations": settings.delay_iterations,
        "max_iterations": settings.max_iterations,
    }
    if settings.http_body is not None:
        details["body"] = dict(settings.http_body)
    details["status"] = reply.status
    return details


def start_server(
    url: str,
    spec: ProfileSpec,
    *,
    version: str | None,
    api_key: str | None,
    timeout: float,
    on_active: OnActive = "error",
) -> RemoteResult:
    """``POST /start_profile`` with the window (vLLM ≥ 0.32) on one server."""
    url = normalize_url(url)
    settings, version_source = _plan(url, spec, version, api_key, timeout)
    if settings is None:
        return RemoteResult(target=url, ok=False, message=version_source)
    reply = request(url, "/start_profile", body=settings.http_body, api_key=api_key, timeout=timeout)
    if reply.status == 409 and on_active == "restart":
        stopped = request(url, "/stop_profile", api_key=api_key, timeout=timeout)
        if not stopped.ok:
            return RemoteResult(target=url, ok=False, message=_failure(url, "/stop_profile", stopped, settings))
        reply = request(url, "/start_profile", body=settings.http_body, api_key=api_key, timeout=timeout)
    details = _details(settings, version_source, reply)
    if not reply.ok:
        return RemoteResult(target=url, ok=False, message=_failure(url, "/start_profile", reply, settings), details=details)
    return RemoteResult(target=url, ok=True, message=_started(settings, spec), details=details)


def _started(settings: VllmSettings, spec: ProfileSpec) -> str:
    window = settings.window
    if settings.mechanism is Mechanism.PER_SESSION:
        return (
            f"started: vLLM {settings.version} records engine steps {window} of this session "
            f"(delay_iterations={settings.delay_iterations}, max_iterations={settings.max_iterations}, prefix {spec.prefix})"
        )
    return (
        f"started, but vLLM {settings.version} takes the window only at launch and profwin cannot read a "
        f"server's launch config over HTTP: it records window {window} only if the server was launched with "
        f"{_relaunch_hint(settings)}"
    )


def stop_server(
    url: str,
    spec: ProfileSpec,
    *,
    version: str | None,
    api_key: str | None,
    timeout: float,
    before: set[Path] | None = None,
) -> RemoteResult:
    """``POST /stop_profile`` on one server, then the trace files it wrote into ``spec.output_dir``.

    ``before``: the trace files present when the session started (then exactly the new ones are
    this session's); without it, the newest file of each rank with the spec's prefix is taken.
    """
    url = normalize_url(url)
    settings, version_source = _plan(url, spec, version, api_key, timeout)
    if settings is None:
        return RemoteResult(target=url, ok=False, message=version_source)
    reply = request(url, "/stop_profile", api_key=api_key, timeout=timeout)
    details = _details(settings, version_source, reply)
    if not reply.ok:
        return RemoteResult(target=url, ok=False, message=_failure(url, "/stop_profile", reply, settings), details=details)
    prefix = spec.prefix if settings.version.takes_prefix else None
    paths = trace_files(spec.output_dir)
    paths = paths - before if before is not None else _newest_per_rank(paths, prefix)
    artifacts = session_artifacts(paths, window=spec.window, prefix=prefix, ranks=spec.ranks, producer=f"vllm@{url}")
    if artifacts:
        message = f"stopped; {sum(a.kind == 'trace' for a in artifacts)} trace file(s) in {spec.output_dir}"
    else:
        message = (
            f"stopped, but no trace {'with prefix ' + repr(prefix) + ' ' if prefix else ''}appeared in {spec.output_dir}: "
            "the window was not reached, or the server writes to another torch_profiler_dir (or machine)"
        )
    return RemoteResult(target=url, ok=True, message=message, artifacts=tuple(artifacts), details=details)


def _newest_per_rank(paths: set[Path], prefix: str | None) -> set[Path]:
    newest: dict[tuple[bool, int | None], TraceFile] = {}
    for trace in filter(None, map(TraceFile.parse, paths)):
        if prefix is not None and not trace.has_prefix(prefix):
            continue
        key = (trace.frontend, trace.rank)
        if key not in newest or trace.time_ns > newest[key].time_ns:
            newest[key] = trace
    return {t.path for t in newest.values()}
