"""``VllmBackend``: the ``vllm`` entry of ``profwin.backends``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profwin.plugin import EnginePlan, ProfileSpec
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

    def target(self, target: Any, *, api_key: str | None, timeout: float) -> VllmServer | VllmEngine:
        if isinstance(target, str):
            return VllmServer(target, api_key=api_key, timeout=timeout)
        return VllmEngine(target)

    def validate_options(self, options: Mapping[str, Any]) -> None:
        options_of(options)

    def check_state(self, plan: EnginePlan, spec: ProfileSpec) -> None:
        check_state(plan, spec)
