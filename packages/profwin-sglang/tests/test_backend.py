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


def test_plan_without_a_server_assumes_the_plugin() -> None:
    plan = SglangBackend().plan(ProfileSpec(window=Window(20, 80)))
    assert plan.request is not None
    assert plan.request["start_step"] == RELATIVE_BASE + 20
    assert plan.request["num_steps"] == 60
    assert plan.server_requirement is not None
    assert "server plugin" in plan.server_requirement
    assert plan.fallback is not None
    assert "records 0:80, then trims the trace to 20:80" in plan.fallback
    immediate = SglangBackend().plan(ProfileSpec(window=Window(0, 5)), version="0.5.23")
    assert (immediate.mechanism, immediate.server_requirement) == ("immediate", None)
    assert immediate.request is not None
    assert "start_step" not in immediate.request


def test_render_json_and_curl(tmp_path: Path) -> None:
    spec = ProfileSpec(window=Window(20, 80), output_dir=tmp_path, activities=["cpu"])
    plan = SglangBackend().plan(spec)
    body = json.loads(render_plan(plan, "json"))
    assert body["start_step"] == RELATIVE_BASE + 20
    assert body["num_steps"] == 60
    assert body["with_stack"] is False
    assert body["record_shapes"] is False
    *comments, command = render_plan(plan, "curl").splitlines()
    assert any("server plugin" in line for line in comments)
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
