"""``SglangBackend``: the ``sglang`` entry of ``profwin.backends``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from profwin.plugin import ConfigError, ProfileSpec, shown
from profwin.plugin.engines import EnginePlan
from profwin_sglang.options import options_of
from profwin_sglang.plan import check_state, plan_for
from profwin_sglang.server_plugin import V2_ENV, unavailable_here
from profwin_sglang.structs import build_profile_req
from profwin_sglang.targets import SglangEngine, SglangServer, is_engine, profiler_from_env
from profwin_sglang.versions import features, sglang_version

__all__ = ["SglangBackend"]


class SglangBackend:
    """SGLang: the window as a session-relative ``/start_profile`` request, on servers or Engines."""

    name = "sglang"
    default_form = "json"

    def plan(self, spec: ProfileSpec, *, version: str | None = None) -> EnginePlan:
        """The plan without a live server to ask (``profwin args``): the request a stock server
        honours (SGLang's default profiler, no plugin), and as the plan's ``alternative`` the
        exact request for a server with profwin-sglang's server plugin, with what it needs."""
        return plan_for(spec, version=version or sglang_version(), given=version is not None, plugin=None, device=None)

    def plan_here(self, spec: ProfileSpec) -> EnginePlan:
        """The plan for an SGLang engine this process is about to launch (verl's builders): the
        relative window only when the SGLang installed here lets the server plugin install its
        hooks (:func:`profwin_sglang.server_plugin.unavailable_here`); otherwise steps ``0:end``,
        trimmed afterwards, with a warning that says why. A window starting at 0 never needs the
        encoding: it goes out in immediate mode, as to a stock server."""
        inactive = unavailable_here()
        relative = inactive is None and (spec.window.start > 0 or spec.window.in_tokens)
        # The engine is started from this process: its environment says which profiler it runs.
        profiler = profiler_from_env(os.environ.get(V2_ENV, "0"))
        return plan_for(
            spec, version=sglang_version(), given=False, plugin=relative, device=None, inactive=inactive or "", profiler=profiler,
            timeline_plugin=(inactive is None) if spec.timeline else None,
        )  # fmt: skip

    def tokenizer_manager_args(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of this process's ``TokenizerManager.start_profile`` for a
        ``/start_profile`` body: ``{"req": ProfileReq(...)}`` on SGLang >= 0.5.23 (its signature is
        ``start_profile(self, req=None)``), the fields as keywords before (0.5.12 takes
        ``start_profile(output_dir=..., ...)``). For a caller that drives a tokenizer manager in
        process with ``start_profile(**kwargs)`` (verl's SGLang server); SGLang is imported here,
        where that manager runs. Where SGLang is missing: the fields, unchanged."""
        version = sglang_version()
        if version is None or not features(version).req_type:
            return dict(body)
        try:
            from sglang.srt.managers.io_struct import ProfileReq, ProfileReqType
        except Exception:  # installed but not importable here (a dependency missing, a half-
            # installed namespace package raising KeyError from importlib): no tokenizer manager runs here
            # either, and a builder must not raise into its trainer
            return dict(body)
        fields = {key: value for key, value in body.items() if value is not None}
        return {"req": build_profile_req(ProfileReq, ProfileReqType, fields)}

    def target(self, target: Any, *, api_key: str | None, timeout: float) -> SglangServer | SglangEngine:
        if isinstance(target, str):
            return SglangServer(target, api_key=api_key, timeout=timeout)
        if is_engine(target):
            return SglangEngine(target)
        raise ConfigError(f"must be an sglang Engine, a server URL or a list of URLs (got {shown(target)})", path="target")

    def validate_options(self, options: Mapping[str, Any]) -> None:
        options_of(options)

    def check_state(self, plan: EnginePlan, spec: ProfileSpec) -> None:
        check_state(plan, spec)
