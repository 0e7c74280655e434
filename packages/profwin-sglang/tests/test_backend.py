"""The CLI face: discovery through the entry point, describe and render_args."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from profwin import Backend, ConfigError, ProfileSpec, Window, backend, plugins
from profwin_sglang import RELATIVE_BASE, SglangBackend


def test_found_through_the_entry_point() -> None:
    (info,) = [p for p in plugins() if p.name == "sglang"]
    assert info.status == "ok", info.detail
    loaded = backend("sglang")
    assert isinstance(loaded, SglangBackend)
    assert isinstance(loaded, Backend)


def test_describe() -> None:
    text = SglangBackend().describe(Window(20, 80))
    assert str(RELATIVE_BASE + 20) in text["start_step"]
    assert text["num_steps"] == "60"
    assert text["without_server_plugin"].startswith("trim: record 0:80 (num_steps=80)")
    assert text["absolute_on_fresh_server"].startswith("start_step=21 ")  # forward_ct's first batch is 1
    immediate = SglangBackend().describe(Window(0, 5), version="0.5.23")["without_server_plugin"]
    assert immediate == "immediate: no start_step, num_steps=5"


def test_render_json_and_curl(tmp_path: Path) -> None:
    spec = ProfileSpec(window=Window(20, 80), output_dir=tmp_path, activities=["cpu"])
    body = json.loads(SglangBackend().render_args(spec, form="json"))
    assert body["start_step"] == RELATIVE_BASE + 20
    assert body["num_steps"] == 60
    assert body["with_stack"] is False
    assert body["record_shapes"] is False
    curl = SglangBackend().render_args(spec, form="curl")
    comment, command = curl.splitlines()
    assert "server plugin" in comment
    words = shlex.split(command)
    assert words[:4] == ["curl", "-sS", "-X", "POST"]
    sent = json.loads(words[-1])
    assert {k: v for k, v in sent.items() if k != "profile_id"} == {k: v for k, v in body.items() if k != "profile_id"}


def test_render_without_the_plugin_and_env(tmp_path: Path) -> None:
    spec = ProfileSpec(window=Window(3, 8), output_dir=tmp_path, options={"sglang": {"start": "trim"}})
    curl = SglangBackend().render_args(spec, form="curl")
    assert "recorded as steps 0:8" in curl
    assert '"num_steps": 8' in curl
    assert '"start_step"' not in curl
    engine = SglangBackend().render_args(ProfileSpec(window=Window(0, 4), output_dir=tmp_path), form="engine")
    assert engine.startswith("engine.start_profile(**{")
    assert "'num_steps': 4" in engine
    env = SglangBackend().render_args(ProfileSpec(output_dir=tmp_path), form="env").splitlines()
    assert f"SGLANG_TORCH_PROFILER_DIR={tmp_path}" in env
    with pytest.raises(ConfigError, match="form"):
        SglangBackend().render_args(spec, form="yaml")
