"""The CLI face: discovery through the entry point, the plan and its rendering."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from profwin import ConfigError, ProfileSpec, Window, backend, plugins, render_plan
from profwin.plugin import Backend
from profwin_sglang import RELATIVE_BASE, SglangBackend


def test_found_through_the_entry_point() -> None:
    (info,) = [p for p in plugins() if p.name == "sglang"]
    assert info.status == "ok", info.detail
    loaded = backend("sglang")
    assert isinstance(loaded, SglangBackend)
    assert isinstance(loaded, Backend)


def test_plan_without_a_server_gives_the_stock_request_first() -> None:
    """``profwin args``: what a stock server honours (SGLang's default profiler, no plugin) is the
    request; the plugin's exact request comes as the alternative, with what it needs."""
    plan = SglangBackend().plan(ProfileSpec(window=Window(20, 80)))
    assert plan.request is not None
    assert "start_step" not in plan.request
    assert plan.request["num_steps"] == 80
    assert (plan.mechanism, plan.records, plan.window) == ("trim", Window(0, 80), Window(20, 80))
    assert plan.server_requirement is None
    assert any("profwin trim TRACE --window 20:80" in note for note in plan.notes)
    assert plan.alternative is not None
    assert "server plugin" in plan.alternative["needs"]
    assert plan.alternative["request"]["start_step"] == RELATIVE_BASE + 20
    assert plan.alternative["request"]["num_steps"] == 60
    assert plan.alternative["records"] == "20:80"
    immediate = SglangBackend().plan(ProfileSpec(window=Window(0, 5)), version="0.5.23")
    assert (immediate.mechanism, immediate.server_requirement, immediate.alternative) == ("immediate", None, None)
    assert immediate.request is not None
    assert "start_step" not in immediate.request


def test_plan_without_a_server_declared_v2_gives_only_the_plugin_request() -> None:
    """A stock request would take a v2 server down: only the plugin's, with its requirement."""
    spec = ProfileSpec(window=Window(20, 80), options={"sglang": {"profiler": "v2"}})
    plan = SglangBackend().plan(spec)
    assert plan.request is not None
    assert plan.request["start_step"] == RELATIVE_BASE + 20
    assert plan.server_requirement is not None
    assert plan.fallback is not None
    assert "would take a server that runs the v2 profiler down" in plan.fallback
    assert plan.alternative is None


def test_render_json_and_curl(tmp_path: Path) -> None:
    spec = ProfileSpec(window=Window(20, 80), output_dir=tmp_path, activities=["cpu"])
    plan = SglangBackend().plan(spec)
    body = json.loads(render_plan(plan, "json"))
    assert "start_step" not in body
    assert body["num_steps"] == 80
    assert body["with_stack"] is False
    assert body["record_shapes"] is False
    *comments, command = render_plan(plan, "curl").splitlines()
    (other,) = [line for line in comments if line.startswith("# with the profwin-sglang server plugin")]
    assert f'"start_step":{RELATIVE_BASE + 20}' in other
    words = shlex.split(command)
    assert words[:4] == ["curl", "-sS", "-X", "POST"]
    assert json.loads(words[-1]) == body


def test_render_without_the_plugin_and_env(tmp_path: Path) -> None:
    spec = ProfileSpec(window=Window(3, 8), output_dir=tmp_path, options={"sglang": {"start": "trim"}})
    curl = render_plan(SglangBackend().plan(spec), "curl")
    assert "recorded as steps 0:8" in curl
    assert '"num_steps":8' in curl
    assert '"start_step"' not in curl
    engine = render_plan(SglangBackend().plan(ProfileSpec(window=Window(0, 4), output_dir=tmp_path)), "engine")
    assert "# then: engine.start_profile(" in engine
    assert "num_steps=4" in engine
    env = render_plan(SglangBackend().plan(ProfileSpec(output_dir=tmp_path)), "env").splitlines()
    assert f"export SGLANG_TORCH_PROFILER_DIR={tmp_path}" in env
    with pytest.raises(ConfigError, match="form"):
        render_plan(SglangBackend().plan(spec), "yaml")


def test_plan_for_an_sglang_the_plugin_cannot_hook_offers_no_plugin_request() -> None:
    """SGLang 0.5.12 (verl's pin) has no module the server plugin hooks: no alternative that
    needs it, only the stock request, trimmed."""
    plan = SglangBackend().plan(ProfileSpec(window=Window(20, 80)), version="0.5.12")
    assert (plan.mechanism, plan.alternative, plan.server_requirement) == ("trim", None, None)
    assert plan.request is not None
    assert plan.request["num_steps"] == 81  # 0.5.12's immediate mode records one batch fewer
