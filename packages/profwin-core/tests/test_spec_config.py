"""ProfileSpec validation and the loaders: dict, YAML/JSON text and files, OmegaConf, spec formats.

verl's blocks are read by profwin-verl's spec format (packages/profwin-verl/tests)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from profwin import ConfigError, ProfileSpec, Window, load_spec, spec_from_mapping, spec_from_yaml


def test_defaults() -> None:
    spec = ProfileSpec()
    assert spec.window == Window()
    assert spec.activities is None
    assert spec.records() == ()
    assert spec.output_dir == Path("profwin-traces").absolute()
    assert spec.prefix == "profwin"
    assert spec.ranks == (0,)
    assert spec.profiles_rank(0)
    assert not spec.profiles_rank(1)


@pytest.mark.parametrize(
    ("kwargs", "path", "fragment"),
    [
        ({"activities": ["gpu"]}, "activities[0]", "'gpu'"),
        ({"activities": "cpu"}, "activities", "must be a list"),
        ({"activities": []}, "activities", "must not be empty"),
        ({"shapes": 1}, "shapes", "true or false"),
        ({"prefix": "-bad"}, "prefix", "starting with a letter or digit"),
        ({"prefix": "a" * 129}, "prefix", "1-128"),
        ({"prefix": "has space"}, "prefix", "[A-Za-z0-9._-]"),
        ({"ranks": [0, -1]}, "ranks[1]", "non-negative"),
        ({"ranks": True}, "ranks", "'all', a rank"),
        ({"ranks": []}, "ranks", "non-empty"),
        ({"ranks": "some"}, "ranks", "'all'"),
        ({"output_dir": ""}, "output_dir", "non-empty path"),
        ({"options": {"npu": 3}}, "options.npu", "mapping"),
        ({"on_unavailable": "ignore"}, "on_unavailable", "'error' or 'drop'"),
        ({"window": "20:80"}, "window", "Window.parse"),
    ],
)
def test_spec_field_errors_name_field_value_and_rule(kwargs: dict[str, object], path: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        ProfileSpec(**kwargs)  # type: ignore[arg-type]
    assert info.value.path == path
    assert fragment in str(info.value)


def test_ranks_forms() -> None:
    assert ProfileSpec(ranks="all").profiles_rank(7)
    assert ProfileSpec(ranks=3).ranks == (3,)  # type: ignore[arg-type]
    assert ProfileSpec(ranks=[1, 2]).profiles_rank(2)  # type: ignore[arg-type]


def test_activities_are_normalised_and_deduplicated() -> None:
    assert ProfileSpec(activities=["cuda", "cpu", "cuda"]).activities == ("cpu", "cuda")
    assert ProfileSpec(activities=(a for a in ["npu", "cpu"])).activities == ("cpu", "npu")
    assert ProfileSpec(activities=["cpu"] * 64).activities == ("cpu",)


@pytest.mark.parametrize("endless", [range(10**18), itertools.count(), itertools.repeat("cpu"), ["cpu"] * 65])
def test_activities_are_read_boundedly(endless: object) -> None:
    """An iterable of 10**18 items, or without end, is refused at once (it was read whole:
    MemoryError, or a hang), found by test_bad_arguments' catalogue."""
    with pytest.raises(ConfigError, match=r"^activities: must list at most 64 activities \(got "):
        ProfileSpec(activities=endless)  # type: ignore[arg-type]


def test_output_dir_is_absolute_created_and_checked(tmp_path: Path) -> None:
    spec = ProfileSpec(output_dir=tmp_path / "a" / "b")
    assert spec.prepare_output_dir() == tmp_path / "a" / "b"
    assert (tmp_path / "a" / "b").is_dir()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="output_dir: must be a writable directory"):
        ProfileSpec(output_dir=blocker / "sub").prepare_output_dir()


def test_spec_is_frozen_and_replace_validates() -> None:
    spec = ProfileSpec()
    with pytest.raises(AttributeError):
        spec.prefix = "x"  # type: ignore[misc]
    assert spec.replace(prefix="run1").prefix == "run1"
    with pytest.raises(ConfigError, match="prefix"):
        spec.replace(prefix="")


def test_mapping_form(tmp_path: Path) -> None:
    spec = spec_from_mapping(
        {
            "window": "20:80",
            "activities": ["cpu"],
            "record": ["shapes", "stack"],
            "output_dir": "traces",
            "prefix": "run1",
            "ranks": "all",
            "options": {"torch": {"format": "json"}},
        },
        base_dir=tmp_path,
    )
    assert spec.window == Window(20, 80)
    assert spec.records() == ("shapes", "stack")
    assert spec.output_dir == tmp_path / "traces"
    assert spec.plugin_options("torch") == {"format": "json"}
    assert spec_from_mapping({"window": {"start": 3}}).window == Window(3)
    assert spec_from_mapping({"profile_token_start": 20, "profile_token_end": 80}).window == Window(20, 80, unit="tokens")


def test_mapping_form_reports_every_error_with_its_path() -> None:
    with pytest.raises(ConfigError) as info:
        spec_from_mapping({"window": "9:3", "record": ["shapes", "stak"], "prefix": "", "colour": 1, "ranks": [-2]})
    paths = sorted(e.path for e in info.value.errors)
    assert paths == ["", "prefix", "ranks[0]", "record[1]", "window"]
    text = str(info.value)
    assert "unknown key 'colour'" in text
    assert "window end must be > window start" in text


# YAML keys that are not strings (`1:`, `null:`, `true:`, `2.5:`) at every level of a spec file.
NON_STRING_KEYS = [
    ("window: '2:5'\n1: x\n", "", "unknown key 1 (valid keys: window,"),
    ("window: '2:5'\nnull: x\n", "", "unknown key None"),
    ("window: {1: 3}\n", "window", "unknown key 1 (valid keys: start, end,"),
    # mixed key types in one mapping: sorted for the message without comparing an int to a str
    ("window: {start: 2, profile_token_end: 5, 1: 3}\n", "window", "not both (got keys [1, 'profile_token_end', 'start'])"),
    ("window: '2:5'\noptions: {true: {start: trim}}\n", "options", "plugin names are strings, such as 'vllm' (got True)"),
    ("window: '2:5'\noptions: {vllm: {2.5: trim}}\n", "options.vllm", "option names are strings (got 2.5)"),
]


@pytest.mark.parametrize(("text", "path", "message"), NON_STRING_KEYS)
def test_a_key_that_is_not_a_string_is_an_error_at_its_path(tmp_path: Path, text: str, path: str, message: str) -> None:
    """Read from a file, as a user's spec arrives: one ConfigError naming where the key is, as an
    unknown key is named (it was `data key 1: must be str`, the reader's own argument, or an
    internal error sorting the keys); ``profwin validate`` lists it and exits 1."""
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_spec(spec_file)
    assert not isinstance(info.value, TypeError)  # a document's error, not a wrong argument
    (error,) = info.value.errors or [info.value]
    assert error.path == path
    assert message in error.reason
    from profwin.cli import main

    assert main(["validate", str(spec_file)]) == 1


def test_window_given_twice_is_an_error() -> None:
    with pytest.raises(ConfigError, match="give the window once"):
        spec_from_mapping({"window": "1:2", "profile_token_start": 1})


def test_yaml_and_json_text() -> None:
    spec = spec_from_yaml("window: '20:80'\nrecord: [memory]\nranks: [0, 1]\n")
    assert (spec.window, spec.memory, spec.ranks) == (Window(20, 80), True, (0, 1))
    assert spec_from_yaml('{"window": "5:"}').window == Window(5)
    with pytest.raises(ConfigError, match="not valid YAML"):
        spec_from_yaml("window: [1, 2\n")


def test_load_spec_from_files(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("window: '2:4'\noutput_dir: out\n")
    spec = load_spec(tmp_path / "s.yaml")
    assert spec.window == Window(2, 4)
    assert spec.output_dir == tmp_path / "out"  # relative to the file, not the working directory
    (tmp_path / "s.json").write_text(json.dumps({"window": {"start": 1, "end": 9}}))
    assert load_spec(str(tmp_path / "s.json")).window == Window(1, 9)
    with pytest.raises(ConfigError, match="cannot read spec file"):
        load_spec(tmp_path / "missing.yaml")


def test_omegaconf_dictconfig() -> None:
    omegaconf = pytest.importorskip("omegaconf", reason="omegaconf is in the test dependency group")
    cfg = omegaconf.OmegaConf.create({"window": {"start": 2, "end": 6}, "record": ["flops"]})
    spec = load_spec(cfg)
    assert (spec.window, spec.flops) == (Window(2, 6), True)


def test_an_interpolation_that_does_not_resolve_is_named_where_it_is_written(tmp_path: Path) -> None:
    """The path is the value's own (OmegaConf's full key), and a file that lists Hydra ``defaults``
    (a user's trainer config, composed at run time with files profwin does not read) says how to
    get what the Hydra app composes; the hint is Hydra's ``--cfg job --resolve``, which prints the
    composed config and exits (checked with hydra-core 1.3)."""
    pytest.importorskip("omegaconf", reason="omegaconf is in the test dependency group")
    text = "{defaults}spec:\n  window: '2:6'\n  output_dir: ${{trainer.default_local_dir}}/profile\n"
    for defaults, hinted in (("defaults: [ppo_trainer, _self_]\n", True), ("", False)):
        (tmp_path / "mine.yaml").write_text(text.format(defaults=defaults))
        with pytest.raises(ConfigError) as info:
            load_spec(tmp_path / "mine.yaml", at="spec")
        assert info.value.path == "spec.output_dir"
        assert info.value.reason.startswith("OmegaConf cannot read it: Interpolation key 'trainer.default_local_dir' not found")
        assert ("--cfg job --resolve" in info.value.reason) is hinted


SPEC_FORMAT = """
from profwin.plugin.trainers import spec_from_mapping


def read(document, data, at):
    if not (isinstance(data, dict) and "toy_window" in data):
        return None
    return spec_from_mapping({"window": data["toy_window"]}, path=at or "")
"""


def test_load_spec_asks_the_installed_spec_formats_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A format plugs in through the ``profwin.spec_formats`` entry point, as backends do; data it
    does not claim is read as a profwin spec, and a format that fails to load hides nothing."""
    from profwin.discovery import spec_formats

    info = tmp_path / "toyformat-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyformat\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[profwin.spec_formats]\ntoy = toyformat:read\nbroken = toyformat_broken:read\n")
    (tmp_path / "toyformat.py").write_text(SPEC_FORMAT)
    (tmp_path / "toyformat_broken.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec_formats.cache_clear()
    try:
        assert load_spec({"job": {"toy_window": "4:9"}}, at="job").window == Window(4, 9)
        assert load_spec({"window": "1:2"}).window == Window(1, 2)
        with pytest.raises(ConfigError, match="unknown key 'toy_windo'"):
            load_spec({"toy_windo": "4:9"})
    finally:
        spec_formats.cache_clear()
