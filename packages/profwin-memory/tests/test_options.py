from __future__ import annotations

import pytest

from profwin import ConfigError
from profwin_memory import DEFAULT_MAX_ENTRIES, MemoryOptions, memory_options


def test_defaults_bound_the_history() -> None:
    options = memory_options({})
    assert options == MemoryOptions()
    assert options.max_entries == DEFAULT_MAX_ENTRIES == 100_000
    assert (options.context, options.stacks, options.format, options.timeline) == ("all", "python", "json", "events")


def test_every_option_is_taken() -> None:
    given = {"max_entries": 5, "context": None, "stacks": "all", "format": "json.gz", "timeline": "steps", "top_ops": 0}
    options = memory_options(given)
    assert {key: getattr(options, key) for key in given} == given


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_entries", 0),
        ("max_entries", True),
        ("max_entries", 1.5),
        ("context", "everything"),
        ("stacks", None),
        ("format", "pickle"),
        ("timeline", "all"),
        ("top_ops", -1),
    ],
)
def test_bad_values_name_the_option(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        memory_options({key: value})
    assert info.value.path == f"options.memory.{key}"
    assert repr(value) in str(info.value)


def test_unknown_key_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'max_entries'"):
        memory_options({"max_entry": 10})
