"""The ``vllm`` entry of ``profwin.backends``: what ``profwin window/args/start/stop`` call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from profwin.plugin_api import RemoteResult
from profwin.spec import ProfileSpec
from profwin.window import Window
from profwin_vllm.remote import fan_out, server_specs, start_server, stop_server
from profwin_vllm.settings import FORMS, render, settings_for
from profwin_vllm.versions import resolve_version

__all__ = ["VllmBackend"]


class VllmBackend:
    """vLLM: the window as launch settings (``serve``, ``llm``, ``env``) or per-session HTTP bodies."""

    name = "vllm"
    forms: tuple[str, ...] = FORMS

    def describe(self, window: Window, *, version: str | None = None) -> Mapping[str, Any]:
        planned, source = resolve_version(version)
        settings = settings_for(ProfileSpec(window=window), planned)
        described: dict[str, Any] = {
            "version": f"{planned} ({source})",
            "mechanism": settings.mechanism.value,
            "delay_iterations": settings.delay_iterations,
            "max_iterations": settings.max_iterations,
        }
        if settings.per_session:
            described["per_session"] = "start_profile/HTTP body carry the window"
        else:
            described["per_session"] = "no: the window is fixed when the engine starts"
        return described

    def render_args(self, spec: ProfileSpec, *, form: str | None = None, version: str | None = None) -> str:
        planned, _ = resolve_version(version)
        return render(settings_for(spec, planned), form)

    def start(
        self,
        targets: Sequence[str],
        spec: ProfileSpec,
        *,
        version: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
    ) -> list[RemoteResult]:
        specs = server_specs(spec, targets)
        return fan_out(
            lambda i: start_server(targets[i], specs[i], version=version, api_key=api_key, timeout=timeout),
            range(len(targets)),
        )

    def stop(
        self,
        targets: Sequence[str],
        spec: ProfileSpec,
        *,
        version: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
    ) -> list[RemoteResult]:
        specs = server_specs(spec, targets)
        return fan_out(
            lambda i: stop_server(targets[i], specs[i], version=version, api_key=api_key, timeout=timeout),
            range(len(targets)),
        )
