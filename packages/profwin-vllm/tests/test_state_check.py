"""``profwin stop`` reads a plan back from a state file another process wrote: the vLLM backend
refuses one its ``plan_for`` could not have made for the session (``VllmBackend.check_state``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from profwin.plugin import ConfigError, ProfileSpec, Window, backend
from profwin.plugin.engines import EnginePlan
from profwin_vllm.plan import fixed_at_launch


def _read_back(plan: EnginePlan) -> dict[str, Any]:
    """The plan as a state file holds it."""
    data: dict[str, Any] = json.loads(json.dumps(plan.to_dict()))
    return data


@pytest.mark.parametrize("version", ["0.12.0", "0.17.0", "0.27.0", "0.32.0"])
@pytest.mark.parametrize("window", ["0:3", "3:7", "5:"])
@pytest.mark.parametrize("prefix", ["profwin", "profwin-0", "profwin-12"])
def test_every_plan_profwin_makes_is_accepted(version: str, window: str, prefix: str) -> None:
    spec = ProfileSpec(window=Window.parse(window), output_dir="/tmp/out", ranks=[0, 2])
    vllm = backend("vllm")
    plan = vllm.plan(spec.replace(prefix=prefix), version=version)
    vllm.check_state(EnginePlan.from_dict(_read_back(plan)), spec)  # type: ignore[attr-defined]
    if not plan.per_session and plan.mechanism == "launch-config":  # launched wider: recorded, then trimmed
        wider = fixed_at_launch(plan, 0, 0)
        vllm.check_state(EnginePlan.from_dict(_read_back(wider)), spec)  # type: ignore[attr-defined]


TAMPERS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "prefix matching every file": (
        lambda d: d["details"]["start_kwargs"].update(profile_prefix=""),
        "details.start_kwargs.profile_prefix",
    ),
    "another prefix": (
        lambda d: d["details"]["start_kwargs"].update(profile_prefix="victim"),
        "details.start_kwargs.profile_prefix",
    ),
    "delay off by one": (lambda d: d["details"].update(delay_iterations=3), "details.delay_iterations"),
    "bool for an int": (lambda d: d["details"].update(max_iterations=True), "details.max_iterations"),
    "request changed": (lambda d: d["request"].update(max_iterations=99), "request"),
    "unknown key": (lambda d: d["details"].update(extra=1), "details"),
    "negative rank": (lambda d: d["details"].update(ranks=[-1]), "details.ranks[0]"),
    "bad version": (lambda d: d.update(version="x"), "version"),
    "records short of the window": (lambda d: d.update(records="4:6"), "records"),
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_a_tampered_plan_is_refused_naming_the_field(tamper: str) -> None:
    spec = ProfileSpec(window=Window(3, 7), output_dir="/tmp/out")
    vllm = backend("vllm")
    data = _read_back(vllm.plan(spec, version="0.32.0"))
    change, path = TAMPERS[tamper]
    change(data)
    with pytest.raises(ConfigError) as refused:
        vllm.check_state(EnginePlan.from_dict(data), spec)  # type: ignore[attr-defined]
    assert refused.value.path.startswith(path), str(refused.value)
