"""The ``toy`` backend: the window as toyserve's ``skip``/``steps``, on toyserve servers.

toyserve (a stand-in engine, see ``toy_engine.py``) takes its trace directory at launch
(``--trace-dir``) and a window per session: ``POST /start_profile {"skip", "steps", "prefix"}``
records steps ``skip .. skip+steps-1`` of the session (``steps: null`` until the stop) and writes
``<prefix>-<n>.trace.json`` on ``POST /stop_profile``. Versions before 1.0 took no window.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from profwin.plugin import Artifact, ConfigError, ProfileSpec
from profwin.plugin.engines import EngineBusy, EnginePlan, EngineVersion, TargetContext, TargetError
from profwin.plugin.remote import is_session_prefix, normalize_url, request
from profwin_traces import count_steps

NEWEST_KNOWN = EngineVersion.parse("1.2.0")


def plan_for(spec: ProfileSpec, version: EngineVersion, source: Any) -> EnginePlan:
    """toyserve's numbers for ``spec.window`` (its ``skip`` counts steps from 0: no off-by-one)."""
    window = spec.window
    if version < "1.0" and (window.start, window.end) != (0, None):
        raise ConfigError(f"toyserve {version} records whole sessions only: use window ':' (got {window})", path="window")
    return EnginePlan(
        engine="toy",
        version=str(version),
        version_source=source,
        mechanism="per-session",
        window=window,
        records=window,
        output_dir=spec.output_dir,
        launch={"trace_dir": str(spec.output_dir)},
        request={"skip": window.start, "steps": window.length, "prefix": spec.prefix},
    )


class ToyServer:
    """One toyserve server, by URL: the four things core asks of a target."""

    def __init__(self, url: str, *, api_key: str | None, timeout: float) -> None:
        self.name = normalize_url(url)
        self.api_key = api_key
        self.timeout = timeout

    def _post(self, path: str, body: Mapping[str, Any] | None = None) -> None:
        reply = request(self.name, path, body=body, api_key=self.api_key, timeout=self.timeout)
        if not reply.ok:
            raise (EngineBusy if reply.status == 409 else TargetError)(reply.describe(), status=reply.status)

    def plan(self, spec: ProfileSpec, version: str | None, ctx: TargetContext) -> EnginePlan:
        if version is not None:
            return plan_for(spec, EngineVersion.parse(version), "given")
        reply = request(self.name, "/version", method="GET", api_key=self.api_key, timeout=self.timeout, expect="object")
        if not reply.ok:
            raise TargetError(reply.describe(), status=reply.status)
        return plan_for(spec, EngineVersion.parse(reply.data.get("version")), "server")

    def start(self, plan: EnginePlan, ctx: TargetContext) -> None:
        self._post("/start_profile", plan.request)

    def stop(self, plan: EnginePlan, ctx: TargetContext) -> bool:
        self._post("/stop_profile")
        return True

    def collect(self, plan: EnginePlan, files: Callable[[], list[Path]], *, stopped: bool) -> tuple[list[Artifact], list[str]]:
        prefix = f"{plan.request['prefix']}-" if plan.request else ""
        artifacts = []
        for path in files():
            if path.name.startswith(prefix) and path.name.endswith(".trace.json"):
                steps = plan.window.clip(plan.window.start + count_steps(path))
                artifacts.append(Artifact(path=path, steps=steps, bytes=path.stat().st_size, producer=f"toy@{self.name}"))
        return artifacts, []


class ToyBackend:
    name = "toy"
    default_form = "json"

    def plan(self, spec: ProfileSpec, *, version: str | None = None) -> EnginePlan:
        return plan_for(spec, EngineVersion.parse(version) if version else NEWEST_KNOWN, "given" if version else "assumed")

    def target(self, target: Any, *, api_key: str | None, timeout: float) -> ToyServer:
        if not isinstance(target, str):
            raise ConfigError(f"toyserve is driven by URL (got {type(target).__name__})", path="target")
        return ToyServer(target, api_key=api_key, timeout=timeout)

    def check_state(self, plan: EnginePlan, spec: ProfileSpec) -> None:
        """``profwin stop`` read ``plan`` from a state file: collect trusts ``request["prefix"]``."""
        if plan.request is None or not is_session_prefix(plan.request.get("prefix"), spec):
            raise ConfigError(f"must be this session's prefix {spec.prefix!r}", path="request.prefix")
