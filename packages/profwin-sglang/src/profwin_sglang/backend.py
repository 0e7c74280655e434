"""``SglangBackend``: what the ``profwin`` CLI calls for ``--engine sglang``."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from profwin.errors import ConfigError
from profwin.plugin_api import RemoteResult
from profwin.spec import ProfileSpec
from profwin.window import Window
from profwin_sglang.plan import plan_window
from profwin_sglang.request import activities_for, launch_env, new_profile_id, options_of, profile_request
from profwin_sglang.server_plugin import RELATIVE_BASE
from profwin_sglang.session import SglangSession
from profwin_sglang.targets import HttpTarget
from profwin_sglang.versions import features, installed_version

__all__ = ["SglangBackend"]

_STATE_DIR = ".profwin-sglang"


def _state_file(output_dir: Path, url: str) -> Path:
    slug = "".join(c if c.isalnum() else "_" for c in url.split("://", 1)[-1])
    return output_dir / _STATE_DIR / f"{slug}.json"


class SglangBackend:
    """SGLang: spec -> ``ProfileReq`` JSON / curl / ``Engine.start_profile`` / launch env, and
    start/stop on live servers by URL."""

    name = "sglang"
    forms: tuple[str, ...] = ("json", "curl", "engine", "env")

    def describe(self, window: Window, *, version: str | None = None) -> Mapping[str, Any]:
        feats = features(version or installed_version())
        relative = plan_window(window, features=feats, plugin=True)
        fallback = plan_window(window, features=feats, plugin=False)
        steps = "until stop" if window.length is None else str(window.length)
        without = (
            f"immediate: no start_step, num_steps={fallback.num_steps}"
            if fallback.mode == "immediate"
            else f"trim: record {fallback.recorded} (num_steps={fallback.num_steps}), cut the trace to {window}"
        )
        return {
            "version": feats.label,
            "step": "one scheduler batch (prefill chunk, decode, mixed, idle) from the session start",
            "start_step": f"2**40+{window.start} = {relative.start_step} (server plugin: {window.start} batches after the request)",
            "num_steps": steps,
            "without_server_plugin": without,
            "absolute_on_fresh_server": f"start_step={window.start + 1} (forward_ct counts from 1 at launch; wrong once any batch ran)",
        }

    def render_args(self, spec: ProfileSpec, *, form: str | None = None, version: str | None = None) -> str:
        form = form or self.forms[0]
        if form not in self.forms:
            raise ConfigError(f"must be one of {list(self.forms)} (got {form!r})", path="form")
        if form == "env":
            return "\n".join(f"{k}={shlex.quote(v)}" for k, v in launch_env(spec).items())
        options = options_of(spec)
        # No live server to ask: assume the server plugin for windows starting later than 0 (the only
        # exact way); 0:N is exact in immediate mode on any server.
        plugin = options.start != "trim" and spec.window.start > 0
        plan = plan_window(spec.window, features=features(version or installed_version()), plugin=plugin,
                           start=options.start, by_stage=options.by_stage)  # fmt: skip
        activities, _ = activities_for(spec, None)
        body = profile_request(spec, plan, activities=activities, profile_id=new_profile_id())
        needs_plugin = plan.mode == "relative" and spec.window.start > 0
        note = (
            f"# start_step {RELATIVE_BASE}+{spec.window.start} needs the profwin-sglang server plugin in the server's "
            "environment; a server without it records nothing\n"
            if needs_plugin
            else ""
        )
        if plan.trims:
            note += f"# {plan.warning}\n"
        if form == "json":
            return json.dumps(body, indent=2)
        if form == "curl":
            return (
                f'{note}curl -sS -X POST "${{SGLANG_URL:-http://127.0.0.1:30000}}/start_profile" '
                f"-H 'Content-Type: application/json' -d {shlex.quote(json.dumps(body))}"
            )
        return f"{note}engine.start_profile(**{body!r})"

    def start(
        self,
        targets: Sequence[str],
        spec: ProfileSpec,
        *,
        version: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
    ) -> list[RemoteResult]:
        """Start on each URL concurrently; the state ``stop`` needs is saved under ``output_dir``."""
        session = self._session(targets, spec, version, api_key, timeout)
        results = session.start(check=False)
        for name, state in session.state().items():
            path = _state_file(spec.output_dir, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(state))
        return results

    def stop(
        self,
        targets: Sequence[str],
        spec: ProfileSpec,
        *,
        version: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
    ) -> list[RemoteResult]:
        """Stop on each URL concurrently and collect the files of the session ``start`` began."""
        session = self._session(targets, spec, version, api_key, timeout)
        state: dict[str, Any] = {}
        for target in session.remotes:
            path = _state_file(spec.output_dir, target.target.name)
            if path.is_file():
                state[target.target.name] = json.loads(path.read_text())
        unknown = session.resume(state)
        results = session.stop()
        for name in state:
            _state_file(spec.output_dir, name).unlink(missing_ok=True)
        for name in unknown:
            results.append(
                RemoteResult(
                    target=name,
                    ok=False,
                    message=f"no session started by profwin for this server in {spec.output_dir} "
                    "(run profwin start with the same --output-dir first)",
                )
            )
        return results

    @staticmethod
    def _session(
        targets: Sequence[str], spec: ProfileSpec, version: str | None, api_key: str | None, timeout: float
    ) -> SglangSession:
        if isinstance(targets, str):
            targets = [targets]
        return SglangSession([HttpTarget(t, api_key=api_key, timeout=timeout) for t in targets], spec, version=version)
