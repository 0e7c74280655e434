"""``profwin stop`` reads a plan back from a state file another process wrote: the SGLang
backend refuses one its ``plan_for`` could not have made for the session before its collect
finds, trims or deletes files by the plan's prefix, profile id and mode."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from profwin.plugin import ConfigError, ProfileSpec, Window, backend
from profwin.plugin.engines import EnginePlan
from profwin_sglang.plan import plan_for


def _read_back(plan: EnginePlan) -> dict[str, Any]:
    """The plan as a state file holds it."""
    data: dict[str, Any] = json.loads(json.dumps(plan.to_dict()))
    return data


@pytest.mark.parametrize("plugin", [True, False, None])
@pytest.mark.parametrize("window", ["0:5", "3:8", "2:"])
@pytest.mark.parametrize("version", ["0.5.12", "0.5.23"])
def test_every_plan_profwin_makes_is_accepted(plugin: bool | None, window: str, version: str) -> None:
    spec = ProfileSpec(window=Window.parse(window), output_dir="/tmp/out")
    plan = plan_for(spec.replace(prefix="profwin-1"), version=version, given=False, plugin=plugin, device="cpu")
    backend("sglang").check_state(EnginePlan.from_dict(_read_back(plan)), spec)  # type: ignore[attr-defined]


TAMPERS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "prefix matching every file": (lambda d: d["details"].update(prefix=""), "details.prefix"),
    "profile id with a path": (lambda d: d["details"].update(profile_id="../x"), "details.profile_id"),
    "profile id not the request's": (lambda d: d["details"].update(profile_id="1-0123abcd"), "request.profile_id"),
    "mode not the mechanism": (lambda d: d["details"].update(mode="relative"), "details.mode"),
    "text for a flag": (lambda d: d["details"].update(client_profile_id="yes"), "details.client_profile_id"),
    "unknown key": (lambda d: d["details"].update(extra=1), "details"),
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_a_tampered_plan_is_refused_naming_the_field(tamper: str) -> None:
    spec = ProfileSpec(window=Window(3, 8), output_dir="/tmp/out")
    data = _read_back(plan_for(spec, version="0.5.23", given=False, plugin=False, device="cpu"))
    change, path = TAMPERS[tamper]
    change(data)
    with pytest.raises(ConfigError) as refused:
        backend("sglang").check_state(EnginePlan.from_dict(data), spec)  # type: ignore[attr-defined]
    assert refused.value.path.startswith(path), str(refused.value)
