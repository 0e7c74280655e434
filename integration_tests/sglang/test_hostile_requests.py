"""Hostile profile requests to a real SGLang 0.5.23 server with profwin's plugin: whatever a client
sends, the plugin's code never raises into the scheduler. Each request is answered (accepted, or
refused with the reason kept in ``/server_info``), and the server serves on.

The server has the plugin (the test is about it) and an admin API key (as SGLang asks for profiling). Each case sends one ``/start_profile`` body, then
``/stop_profile``, then a real request; the table of answers is printed (the closing note holds it).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import ADMIN_KEY, Server, _serve

pytestmark = [pytest.mark.sglang, pytest.mark.slow]

TOKEN = 1 << 41
MAX_STEP = (1 << 31) - 1
BASE = {"activities": ["CPU"], "with_stack": False, "record_shapes": False}

# name -> (body fields, expected: "refused" or "accepted")
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "token start+count past 2**31-1": ({"start_step": TOKEN + MAX_STEP - 2, "num_steps": 5}, "refused"),
    "token start at 2**31-1 + count": ({"start_step": TOKEN + MAX_STEP, "num_steps": 1}, "refused"),
    "token start past the window range": ({"start_step": TOKEN + (1 << 31) + 7, "num_steps": 3}, "refused"),
    "token range, huge count": ({"start_step": TOKEN + 3, "num_steps": 1 << 40}, "refused"),
    "token range top": ({"start_step": 2 * TOKEN - 1, "num_steps": 2}, "refused"),
    "token window with by-stage": ({"start_step": TOKEN + 2, "num_steps": 3, "profile_by_stage": True}, "refused"),
    "token window with merge": ({"start_step": TOKEN + 2, "num_steps": 3, "merge_profiles": True}, "refused"),
    "token window, negative count": ({"start_step": TOKEN + 2, "num_steps": -4}, "refused"),
    "valid token window": ({"start_step": TOKEN + 1, "num_steps": 2}, "accepted"),
}


@pytest.fixture(scope="module")
def server(tiny_model: Path, plugin_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from _serve(tiny_model, tmp_path_factory.mktemp("hostile"), plugin_site=plugin_site, api_key=ADMIN_KEY)


def _plugin_state(server: Server) -> dict[str, Any]:
    return dict(server.server_info()["internal_states"][0]["profwin_sglang"])


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_request_is_answered_and_the_server_serves_on(server: Server, tmp_path: Path, name: str) -> None:
    fields, expected = CASES[name]
    before = _plugin_state(server)["error_count"]
    status, text = server.post("/start_profile", {**BASE, "output_dir": str(tmp_path), **fields})
    state = _plugin_state(server)
    if expected == "refused":
        assert status >= 400, (status, text)
        assert state["error_count"] == before + 1, state
        said = state["errors"][-1]
    else:
        assert status == 200, (status, text)
        assert state["error_count"] == before, state
        said = "accepted"
    server.post("/stop_profile")  # whatever was armed is stopped (or "not in progress")
    server.generate(4)  # the scheduler is alive and serving
    assert server.alive()
    print(f"HOSTILE | {name} | HTTP {status} | {said}")
