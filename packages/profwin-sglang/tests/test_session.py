"""Session arguments and failure paths that need no SGLang server."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from profwin import ConfigError, ProfileSpec, Window
from profwin.errors import ArgumentTypeError
from profwin.runtime.remote import start_remote, stop_remote
from profwin_sglang import SessionError, session
from profwin_sglang.targets import ServerInfo


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_bad_targets_and_specs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Engine, a server URL"):
        session(42, "0:5")
    with pytest.raises(ArgumentTypeError, match="spec: must be"):
        session("http://127.0.0.1:1", 5)  # type: ignore[arg-type]
    s = session(["http://a:1", "b:2"], Window(3, 8))
    assert [p.target.name for p in s._parts] == ["http://a:1", "http://b:2"]
    assert s.spec.window == Window(3, 8)


def test_wrong_port(tmp_path: Path) -> None:
    dead = _dead_url()
    with pytest.raises(SessionError, match="cannot reach") as info:
        session(dead, ProfileSpec(window=Window(0, 5), output_dir=tmp_path)).start()
    (result,) = info.value.results
    assert (result.target, result.ok) == (dead, False)


def test_backend_reports_per_server(tmp_path: Path) -> None:
    dead = [_dead_url(), _dead_url()]
    spec = ProfileSpec(window=Window(0, 5), output_dir=tmp_path)
    results = start_remote("sglang", dead, spec, timeout=5)
    assert [r.ok for r in results] == [False, False]
    stopped = stop_remote("sglang", dead, spec, timeout=5)
    assert all("no session started by profwin" in r.message for r in stopped)


def test_server_info_parsing() -> None:
    base = {"version": "0.5.23", "device": "cpu"}
    assert ServerInfo.parse(base) == ServerInfo(version="0.5.23", device="cpu", plugin=False)
    ours = {"protocol": 1, "relative_base": 1 << 40, "forward_ct": 17}
    info = ServerInfo.parse({**base, "internal_states": [{"profwin_sglang": ours}]})
    assert (info.plugin, info.forward_ct) == (True, 17)
    other_protocol = {**ours, "protocol": 99}
    assert not ServerInfo.parse({**base, "internal_states": [{"profwin_sglang": other_protocol}]}).plugin
