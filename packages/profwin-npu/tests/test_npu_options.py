"""Ascend option validation: defaults, accepted spellings, and errors naming field, value and rule."""

from __future__ import annotations

from typing import Any

import pytest

from profwin import ConfigError, ProfileSpec, spec_from_mapping
from profwin_npu import AIC_METRICS, LEVELS, NpuOptions, npu_options
from profwin_verl import spec_from_verl


def parse(**options: Any) -> NpuOptions:
    return NpuOptions.from_mapping(options)


def test_defaults_follow_torch_npu_and_verl() -> None:
    opts = npu_options(ProfileSpec())
    assert (opts.level, opts.aic_metrics, opts.l2_cache, opts.data_simplification) == ("level0", "AiCoreNone", False, True)
    assert (opts.export_type, opts.analysis, opts.mstx) == (("text",), False, False)
    assert (opts.mstx_domain_include, opts.mstx_domain_exclude, opts.explicit) == ((), (), frozenset())


@pytest.mark.parametrize("level", [*LEVELS, "Level1", "LEVEL2", "Level_none"])
def test_levels_in_verl_or_torch_npu_spelling(level: str) -> None:
    assert parse(level=level).level == level.lower()


@pytest.mark.parametrize("level", ["level3", "1", 1, None, "L1"])
def test_bad_level_names_field_value_and_rule(level: object) -> None:
    with pytest.raises(ConfigError) as err:
        parse(level=level)
    assert err.value.path == "options.npu.level"
    assert repr(level) in str(err.value)
    assert "level_none" in str(err.value)


def test_aic_metrics_default_depends_on_level() -> None:
    # torch_npu collects no AI Core metrics below level1 (and warns if asked), PipeUtilization above.
    assert parse(level="level0").aic_metrics == "AiCoreNone"
    assert parse(level="level_none").aic_metrics == "AiCoreNone"
    assert parse(level="level1").aic_metrics == "PipeUtilization"
    assert parse(level="level2").aic_metrics == "PipeUtilization"


@pytest.mark.parametrize(
    ("given", "name"),
    [("PipeUtilization", "PipeUtilization"), ("pipe_utilization", "PipeUtilization"), ("memory_ub", "MemoryUB"),
     ("L2Cache", "L2Cache"), ("l2_cache", "L2Cache"), ("none", "AiCoreNone"), ("AiCoreNone", "AiCoreNone")],
)  # fmt: skip
def test_aic_metrics_spellings(given: str, name: str) -> None:
    assert parse(level="level1", aic_metrics=given).aic_metrics == name


@pytest.mark.parametrize("name", AIC_METRICS)
def test_every_metric_name_round_trips(name: str) -> None:
    assert parse(level="level2", aic_metrics=name).aic_metrics == name


def test_aic_metrics_below_level1_is_an_error_not_a_silent_reset() -> None:
    with pytest.raises(ConfigError, match="'Memory' needs level1 or level2 \\(level is 'level0'\\)") as err:
        parse(aic_metrics="Memory")
    assert err.value.path == "options.npu.aic_metrics"
    assert parse(aic_metrics="none").aic_metrics == "AiCoreNone"  # asking for none is fine at level0


def test_unknown_metric() -> None:
    with pytest.raises(ConfigError, match=r"must be one of .*'PipeUtilization'.* \(got 'pipe'\)") as err:
        parse(level="level1", aic_metrics="pipe")
    assert err.value.path == "options.npu.aic_metrics"


@pytest.mark.parametrize("key", ["l2_cache", "data_simplification", "analysis", "mstx", "msprof_tx"])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_switches_must_be_bools(key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"must be true or false \\(got {value!r}\\)") as err:
        parse(**{key: value})
    assert err.value.path == f"options.npu.{key}"


@pytest.mark.parametrize(
    ("given", "expected"),
    [("text", ("text",)), ("db", ("db",)), ("DB", ("db",)), (["db", "text"], ("text", "db")), (["db", "db"], ("db",))],
)
def test_export_type(given: object, expected: tuple[str, ...]) -> None:
    assert parse(export_type=given).export_type == expected


@pytest.mark.parametrize(
    ("given", "path"),
    [("json", "options.npu.export_type"), ([], "options.npu.export_type"), (["text", "csv"], "options.npu.export_type[1]"),
     (3, "options.npu.export_type")],
)  # fmt: skip
def test_bad_export_type(given: object, path: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse(export_type=given)
    assert err.value.path == path


def test_level_none_turns_mstx_on_and_refuses_it_off() -> None:
    assert parse(level="level_none").mstx is True
    with pytest.raises(ConfigError, match="level_none collects only mstx marks") as err:
        parse(level="level_none", mstx=False)
    assert err.value.path == "options.npu.mstx"


def test_msprof_tx_is_the_old_name_of_mstx() -> None:
    assert parse(msprof_tx=True).mstx is True
    assert parse(msprof_tx=True).explicit == {"mstx"}
    assert parse(mstx=True, msprof_tx=True).mstx is True
    with pytest.raises(ConfigError, match="disagree") as err:
        parse(mstx=True, msprof_tx=False)
    assert err.value.path == "options.npu.msprof_tx"


def test_mstx_domains() -> None:
    opts = parse(mstx=True, mstx_domain_exclude=["communication", "communication", "x"])
    assert opts.mstx_domain_exclude == ("communication", "x")
    with pytest.raises(ConfigError, match="set mstx: true") as err:
        parse(mstx_domain_include=["default"])
    assert err.value.path == "options.npu.mstx_domain_include"
    with pytest.raises(ConfigError, match="not both") as err:
        parse(mstx=True, mstx_domain_include=["a"], mstx_domain_exclude=["b"])
    assert err.value.path == "options.npu.mstx_domain_exclude"
    with pytest.raises(ConfigError) as err:
        parse(mstx=True, mstx_domain_include=["a", ""])
    assert err.value.path == "options.npu.mstx_domain_include[1]"
    with pytest.raises(ConfigError, match="must be a list"):
        parse(mstx=True, mstx_domain_include="a")


def test_unknown_key_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'levle'.*did you mean 'level'") as err:
        parse(levle="level1")
    assert err.value.path == "options.npu"


def test_not_a_mapping() -> None:
    with pytest.raises(ConfigError, match="must be a mapping"):
        NpuOptions.from_mapping(["level1"])  # type: ignore[arg-type]


def test_explicit_records_what_the_user_set() -> None:
    assert parse(level="level1", analysis=False).explicit == {"level", "analysis"}


def test_options_from_a_spec_mapping() -> None:
    spec = spec_from_mapping({"window": "2:5", "options": {"npu": {"level": "level2", "export_type": "db"}}})
    opts = npu_options(spec)
    assert (opts.level, opts.export_type, opts.aic_metrics) == ("level2", ("db",), "PipeUtilization")


def test_verl_npu_tool_block_reaches_the_options() -> None:
    # verl's NPUToolConfig: contents, level, analysis, token window.
    block = {
        "tool": "npu",
        "save_path": "/tmp/verl-prof",
        "tool_config": {
            "npu": {"contents": ["npu", "cpu", "module"], "level": "level1", "analysis": True,
                    "profile_token_start": 5, "profile_token_end": 13, "discrete": True},
        },
    }  # fmt: skip
    spec = spec_from_verl(block)
    opts = npu_options(spec)
    assert (opts.level, opts.analysis, opts.aic_metrics) == ("level1", True, "PipeUtilization")
    assert (spec.window.start, spec.window.end, spec.activities, spec.modules) == (5, 13, ("cpu", "npu"), True)


def test_verl_bad_level_is_reported_at_the_options_path() -> None:
    spec = spec_from_verl({"contents": [], "level": "level9"})
    with pytest.raises(ConfigError) as err:
        npu_options(spec)
    assert err.value.path == "options.npu.level"
    assert "'level9'" in str(err.value)
