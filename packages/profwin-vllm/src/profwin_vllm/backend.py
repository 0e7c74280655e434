"""``VllmBackend``: the ``vllm`` entry of ``profwin.backends``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profwin.plugin import ProfileSpec
from profwin.plugin.engines import EnginePlan
from profwin_vllm.engine_plugin import unavailable_here
from profwin_vllm.options import options_of
from profwin_vllm.plan import check_state, plan_for
from profwin_vllm.targets import VllmEngine, VllmServer
from profwin_vllm.versions import resolve_version

__all__ = ["VllmBackend"]


class VllmBackend:
    """vLLM: the window as launch settings or per-session requests, on engines or servers."""

    name = "vllm"
    default_form = "serve"

    def plan(self, spec: ProfileSpec, *, version: str | None = None) -> EnginePlan:
        planned, source = resolve_version(version)
        return plan_for(spec, planned, source)

    def plan_here(self, spec: ProfileSpec) -> EnginePlan:
        """The plan for a vLLM engine this process is about to launch (verl's builders): a token
        window (and the session timeline) only when an engine started from here runs profwin-vllm's
        engine plugin (:func:`profwin_vllm.engine_plugin.unavailable_here`); otherwise its steps
        (and no timeline), with a note."""
        planned, source = resolve_version(None)
        inactive = unavailable_here() if spec.window.in_tokens or spec.timeline else None
        return plan_for(
            spec, planned, source, plugin=inactive is None, inactive=inactive or "",
            timeline_plugin=(inactive is None) if spec.timeline else None,
        )  # fmt: skip

    def target(self, target: Any, *, api_key: str | None, timeout: float) -> VllmServer | VllmEngine:
        if isinstance(target, str):
            return VllmServer(target, api_key=api_key, timeout=timeout)
        return VllmEngine(target)

    def validate_options(self, options: Mapping[str, Any]) -> None:
        options_of(options)

    def check_state(self, plan: EnginePlan, spec: ProfileSpec) -> None:
        check_state(plan, spec)
