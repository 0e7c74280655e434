"""profwin-slime without engines: its settings read from slime's ``args``, and what its rollout
function calls. The rollout function it wraps here is a plain function with slime's signature
that records its calls (what profwin-slime hands it is what is checked); a router is the suite's
stub HTTP server, which records every request (none for rollouts not chosen); slime itself is its
metadata only (``slime-0.3.1.dist-info``: profwin-slime imports nothing of slime's). Real SGLang
servers behind the real sglang-router, with slime's RolloutManager as a Ray actor:
integration_tests/sglang/test_router.py. The version rule and the verb pair's policy are every
trainer's: integration_tests/test_trainer_layout.py."""

from __future__ import annotations

import argparse
import sys
import types
import warnings
from argparse import Namespace
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import profwin
import profwin_slime
from profwin_slime.seam import INTEGRATION
from profwin_slime.settings import FULLY_ASYNC, SlimeProfiling

DEFAULT_OUTPUT_DIR = "/tmp/profwin-rollouts"


@pytest.fixture(autouse=True)
def slime_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """slime 0.3.1's metadata on the path, and profwin-slime as a fresh process finds it (not yet
    switched on by a first rollout); its records are counted per test."""
    info = tmp_path / "site" / "slime-0.3.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: slime\nVersion: 0.3.1\n")
    monkeypatch.syspath_prepend(str(info.parent))
    INTEGRATION.disable()
    INTEGRATION.enabled = None
    yield
    INTEGRATION.disable()
    INTEGRATION.enabled = None


def new_records(before: list[Any]) -> list[Any]:
    return profwin_slime.records()[len(before) :]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """``recorded.rollout``: a rollout function with slime's signature that records its calls."""
    seen: list[tuple[Any, ...]] = []
    module = types.ModuleType("recorded")

    def rollout(args: Any, rollout_id: int, data_source: Any, evaluation: bool = False) -> str:
        seen.append((args, rollout_id, data_source, evaluation))
        return f"output of {rollout_id}"

    module.rollout = rollout  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "recorded", module)
    return seen


def _args(**keys: Any) -> Namespace:
    return Namespace(sglang_router_ip="127.0.0.1", sglang_router_port=9, **keys)


def test_settings_from_args_with_their_defaults() -> None:
    assert SlimeProfiling.from_args(_args()) is None  # no profwin_rollouts: off
    config = SlimeProfiling.from_args(_args(profwin_rollouts="1,3", profwin_spec="20:80"))
    assert config is not None
    assert (str(config.rollouts), config.spec["window"], config.spec["output_dir"]) == ("1,3", "20:80", DEFAULT_OUTPUT_DIR)
    assert (config.evaluation, config.rollout_function) == (False, "slime.rollout.sglang_rollout.generate_rollout")
    as_yaml = _args(
        profwin_rollouts=[2, 5],
        profwin_spec={"window": "2:6", "output_dir": "/shared/t", "activities": ["cpu"]},
        profwin_eval=True,
        profwin_rollout_function="my.rollout.fn",
    )
    config = SlimeProfiling.from_args(as_yaml)
    assert config is not None
    spec = config.spec_here()
    assert (str(config.rollouts), spec.activities, str(spec.output_dir)) == ("2,5", ("cpu",), "/shared/t")
    assert (config.evaluation, config.rollout_function) == (True, "my.rollout.fn")
    as_json = SlimeProfiling.from_args(_args(profwin_rollouts="%10", profwin_spec='{"window": "0:4", "record": ["stack"]}'))
    assert as_json is not None
    assert (str(as_json.rollouts), str(as_json.spec_here().window), as_json.spec_here().stack) == ("0%10", "0:4", True)


def test_add_arguments_gives_the_same_settings_as_the_custom_config() -> None:
    parser = profwin_slime.add_arguments(argparse.ArgumentParser())
    parsed = parser.parse_args(["--profwin-rollouts", "3+2", "--profwin-spec", "20:80", "--profwin-eval"])
    config = SlimeProfiling.from_args(parsed)
    assert config is not None
    assert (str(config.rollouts), config.spec["window"], config.evaluation) == ("3+2", "20:80", True)
    assert SlimeProfiling.from_args(parser.parse_args([])) is None


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"profwin_rollouts": "1-3", "profwin_spec": "2:6"}, "profwin_rollouts: must be rollout ids like '3,7'"),
        ({"profwin_rollouts": [1, -1], "profwin_spec": "2:6"}, "profwin_rollouts[1]: a rollout id must be an int >= 0"),
        ({"profwin_rollouts": "1"}, "profwin_spec: must say the window to record in each profiled rollout, e.g. '20:80'"),
        ({"profwin_rollouts": "1", "profwin_spec": "2-6"}, "profwin_spec must have exactly one ':'"),
        (
            {"profwin_rollouts": "1", "profwin_spec": "{window: 2:6"},
            "profwin_spec: must be a window like '20:80' or a spec as JSON",
        ),
        ({"profwin_rollouts": "1", "profwin_spec": {"output_dir": "/t"}}, "profwin_spec: must say the window to record"),
        ({"profwin_rollouts": "1", "profwin_spec": {"window": "2:6", "recrod": ["stack"]}}, "profwin_spec: unknown key 'recrod'"),
        (
            {"profwin_rollouts": "1", "profwin_spec": "2:6", "profwin_eval": "yes"},
            "profwin_eval: must be true or false (got 'yes')",
        ),
        (
            {"profwin_rollouts": "1", "profwin_spec": "2:6", "profwin_rollout_function": "profwin_slime.generate_rollout"},
            "profwin_rollout_function: is profwin-slime itself (profwin_slime.generate_rollout): name the function it should call",
        ),
        (
            {"profwin_rollouts": "1", "profwin_spec": "2:6", "profwin_rollout_function": FULLY_ASYNC},
            f"profwin_rollout_function: {FULLY_ASYNC} keeps generations in flight across rollout boundaries",
        ),
        (
            {"profwin_rollouts": "1", "profwin_spec": "2:6", "profwin_rollout_function": "not a path"},
            "profwin_rollout_function: must be a dotted path like 'package.module.function' (got 'not a path')",
        ),
    ],
)
def test_bad_settings_name_the_key_the_value_and_the_rule(keys: dict[str, Any], message: str) -> None:
    with pytest.raises(profwin.ConfigError) as failed:
        SlimeProfiling.from_args(_args(**keys))
    assert str(failed.value).startswith(message) or message in str(failed.value), str(failed.value)


def test_off_it_calls_the_wrapped_function_as_it_is(calls: list[tuple[Any, ...]]) -> None:
    args = _args(profwin_rollout_function="recorded.rollout")
    data = object()
    before = profwin_slime.records()
    assert profwin_slime.generate_rollout(args, 4, data, evaluation=True) == "output of 4"
    assert calls == [(args, 4, data, True)]
    assert new_records(before) == []
    assert INTEGRATION.enabled  # its first call switched it on


def test_rollouts_not_chosen_and_evaluation_ask_the_router_nothing(
    calls: list[tuple[Any, ...]], stub_server: Callable[..., Any]
) -> None:
    router = stub_server(lambda req: (200, {"workers": []}))
    port = int(router.url.rsplit(":", 1)[1])
    args = Namespace(
        sglang_router_ip="127.0.0.1", sglang_router_port=port, profwin_rollouts="3", profwin_spec="2:6",
        profwin_rollout_function="recorded.rollout",
    )  # fmt: skip
    before = profwin_slime.records()
    for rollout_id in (0, 1, 2, 4):
        assert profwin_slime.generate_rollout(args, rollout_id, None) == f"output of {rollout_id}"
    assert profwin_slime.generate_rollout(args, 3, None, evaluation=True) == "output of 3"  # eval: not asked for
    assert router.seen == []
    assert [c[1:] for c in calls] == [(0, None, False), (1, None, False), (2, None, False), (4, None, False), (3, None, True)]
    assert new_records(before) == []


def test_a_profiled_rollout_whose_router_lists_nothing_still_runs(
    calls: list[tuple[Any, ...]], stub_server: Callable[..., Any]
) -> None:
    router = stub_server(lambda req: (200, {"workers": []}))
    port = int(router.url.rsplit(":", 1)[1])
    args = Namespace(
        sglang_router_ip="127.0.0.1", sglang_router_port=port, profwin_rollouts="3", profwin_spec="2:6",
        profwin_rollout_function="recorded.rollout", profwin_eval=True,
    )  # fmt: skip
    before = profwin_slime.records()
    with pytest.warns(profwin.WindowWarning, match=r"eval 3: not profiled: router: .* lists no worker"):
        assert profwin_slime.generate_rollout(args, 3, None, evaluation=True) == "output of 3"
    assert [r.path for r in router.seen] == ["/workers"]
    (record,) = new_records(before)
    assert (record.rollout, record.kind, record.ok) == (3, "eval", False)


def test_a_rollout_function_that_cannot_be_loaded_is_a_clear_error(calls: list[tuple[Any, ...]]) -> None:
    """What to call is slime's configuration: without it nothing can run, so it is an error."""
    with pytest.raises(
        profwin.ConfigError, match=r"^profwin_rollout_function: cannot load 'nowhere_at_all.rollout': ModuleNotFoundError"
    ):
        profwin_slime.generate_rollout(_args(profwin_rollout_function="nowhere_at_all.rollout"), 0, None)
    with pytest.raises(profwin.ConfigError, match=r"^profwin_rollout_function: is profwin-slime itself"):
        profwin_slime.generate_rollout(_args(profwin_rollout_function="profwin_slime.generate_rollout"), 0, None)


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        (
            {"profwin_rollouts": "1", "profwin_spec": "2:6", "sglang_router_ip": None, "sglang_router_port": None},
            "sglang_router_ip: slime's router address is not set",
        ),
        ({"profwin_rollouts": "1-3", "profwin_spec": "2:6"}, "profwin_rollouts: must be rollout ids like '3,7'"),
        ({"profwin_rollouts": "1"}, "profwin_spec: must say the window to record in each profiled rollout"),
    ],
)
def test_settings_that_cannot_be_read_are_one_warning_and_the_rollouts_run(
    calls: list[tuple[Any, ...]], keys: dict[str, Any], says: str
) -> None:
    """Profiling never stops slime: settings it cannot use are said once, and every rollout runs."""
    args = Namespace(
        **{"sglang_router_ip": "127.0.0.1", "sglang_router_port": 9, **keys, "profwin_rollout_function": "recorded.rollout"}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for rollout_id in range(3):
            assert profwin_slime.generate_rollout(args, rollout_id, None) == f"output of {rollout_id}"
    assert [str(w.message) for w in caught if "profwin" in str(w.message)] == [
        f"profwin-slime left slime unprofiled: {says}" + str(caught[0].message).split(says, 1)[1]
    ]
    assert [c[1] for c in calls] == [0, 1, 2]


def test_fully_async_is_called_unprofiled_with_one_warning(monkeypatch: pytest.MonkeyPatch, calls: list[tuple[Any, ...]]) -> None:
    module_name, _, name = FULLY_ASYNC.rpartition(".")
    fully_async = types.ModuleType(module_name)
    setattr(fully_async, name, sys.modules["recorded"].rollout)  # type: ignore[attr-defined]
    for parent in ("slime", "slime.rollout"):
        monkeypatch.setitem(sys.modules, parent, types.ModuleType(parent))
    monkeypatch.setitem(sys.modules, module_name, fully_async)
    args = _args(profwin_rollouts="1", profwin_spec="2:6", profwin_rollout_function=FULLY_ASYNC)
    with pytest.warns(
        RuntimeWarning, match=r"profwin-slime left slime unprofiled: profwin_rollout_function: .* keeps generations"
    ):
        assert profwin_slime.generate_rollout(args, 1, None) == "output of 1"


def test_disable_and_enable_with_settings_of_ones_own(calls: list[tuple[Any, ...]], stub_server: Callable[..., Any]) -> None:
    router = stub_server(lambda req: (200, {"workers": []}))
    args = Namespace(
        sglang_router_ip="127.0.0.1", sglang_router_port=int(router.url.rsplit(":", 1)[1]),
        profwin_rollout_function="recorded.rollout",
    )  # fmt: skip
    assert profwin_slime.enable(SlimeProfiling(rollouts="1", spec="2:6", rollout_function="recorded.rollout")) == [
        "profwin_slime.seam.generate_rollout"
    ]
    with pytest.warns(profwin.WindowWarning, match=r"rollout 1: not profiled: router: .* lists no worker"):
        profwin_slime.generate_rollout(args, 1, None)  # args say nothing: the settings given say rollout 1
    assert [r.path for r in router.seen] == ["/workers"]
    assert profwin_slime.disable() == ["profwin_slime.seam.generate_rollout"]
    assert profwin_slime.generate_rollout(args, 1, None) == "output of 1"
    assert [r.path for r in router.seen] == ["/workers"]  # off: nothing asked


def test_listed_as_a_trainer_integration() -> None:
    (info,) = [p for p in profwin.plugins() if p.name == "slime"]
    assert (info.group, info.distribution, info.version) == ("profwin.trainers", "profwin-slime", "0.1.0")
    assert info.spec is not None
    assert (info.spec.kind, info.spec.target, info.spec.requires) == (
        "trainer",
        "profwin_slime.seam:INTEGRATION",
        ("slime>=0.3.1,<0.4",),
    )
    assert info.status == "ok"  # slime 0.3.1's metadata is on the path


def test_the_settings_json_form_round_trips() -> None:
    config = SlimeProfiling.from_args(_args(profwin_rollouts="5+3%10", profwin_spec={"window": "2:6", "output_dir": "/t"}))
    assert config is not None
    data = config.to_dict()
    assert (data["rollouts"], data["spec"]["window"]) == ("5+3%10", "2:6")
    assert SlimeProfiling.from_dict(data) == config


DEEP_JSON = '{"window": "2:6", "x": ' + "[" * 5000 + "]" * 5000 + "}"


def _deep_mapping() -> dict[str, object]:
    inner: object = []
    for _ in range(5000):
        inner = [inner]
    return {"window": "2:6", "x": inner}


@pytest.mark.parametrize(
    ("settings", "where", "says"),
    [
        ({"profwin_rollouts": "1", "profwin_spec": DEEP_JSON}, "profwin_spec", "nested deeper than 100 levels"),
        ({"profwin_rollouts": "1", "profwin_spec": _deep_mapping()}, "profwin_spec", "nested deeper than 100 levels"),
        (
            {"profwin_rollouts": "1", "profwin_spec": "{not json"},
            "profwin_spec",
            "must be a window like '20:80' or a spec as JSON",
        ),
        ({"profwin_rollouts": "1", "profwin_spec": 5}, "profwin_spec", "must be a window like '20:80' or a spec mapping"),
        ({"profwin_rollouts": "1", "profwin_spec": "2:6", "profwin_eval": "yes"}, "profwin_eval", "must be true or false"),
    ],
)
def test_slimes_settings_take_bad_values_as_config_errors(settings: dict[str, object], where: str, says: str) -> None:
    """profwin_spec holding JSON 5,000 deep escaped as a RecursionError; every setting is read by
    core's one reader of a trainer's spec and checked where it enters."""
    with pytest.raises(profwin.ConfigError) as caught:
        SlimeProfiling.from_args(argparse.Namespace(**settings))
    assert caught.value.path == where, str(caught.value)
    assert says in str(caught.value)
    assert len(str(caught.value)) < 600


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"rollouts": "x", "spec": "2:6"}, "rollouts"),
        ({"rollouts": "1", "spec": 5}, "spec"),
        ({"rollouts": "1", "spec": "2:6", "evaluation": "yes"}, "evaluation"),
        ({"rollouts": "1", "spec": "2:6", "rollout_function": 7}, "rollout_function"),
        ({"rollouts": "1", "spec": "2:6", "rollout_function": "profwin_slime.generate_rollout"}, "rollout_function"),
    ],
)
def test_slimes_settings_are_checked_however_they_are_made(fields: dict[str, object], where: str) -> None:
    with pytest.raises(profwin.ConfigError) as caught:
        SlimeProfiling(**fields)  # type: ignore[arg-type]
    assert caught.value.path == where, str(caught.value)


def test_one_key_switches_the_session_timeline_on() -> None:
    config = SlimeProfiling.from_args(_args(profwin_rollouts="1", profwin_spec="20:80", profwin_timeline=True))
    assert config is not None
    assert config.spec_here().timeline is True
    parsed = profwin_slime.add_arguments(argparse.ArgumentParser()).parse_args(
        ["--profwin-rollouts", "1", "--profwin-spec", "20:80", "--profwin-timeline"]
    )
    flagged = SlimeProfiling.from_args(parsed)
    assert flagged is not None
    assert flagged.spec_here().timeline is True
    off = SlimeProfiling.from_args(_args(profwin_rollouts="1", profwin_spec="20:80"))
    assert off is not None
    assert off.spec_here().timeline is False
    with pytest.raises(profwin.ConfigError, match="profwin_timeline: must be true or false"):
        SlimeProfiling.from_args(_args(profwin_rollouts="1", profwin_spec="20:80", profwin_timeline="yes"))
