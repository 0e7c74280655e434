"""Arguments checked where they enter profwin (``profwin.arguments``): bad input to a public
callable is a ``ConfigError`` naming the parameter, the value and the rule, never a ``TypeError``
or ``RecursionError`` from inside; nesting is bounded in one place; paths are strict about NUL
bytes and unknown ``~user``. Real files, real specs, the real command line."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pytest

import profwin
import profwin.plugin
from profwin import ConfigError, ProfileSpec, Window, load_spec, spec_from_mapping
from profwin.arguments import MAX_DEPTH, check_arguments, checked
from profwin.errors import shown

if TYPE_CHECKING:
    from decimal import Decimal  # a name imported for type checkers only


def deep(levels: int, kind: type = dict) -> Any:
    value: Any = kind()
    for _ in range(levels):
        value = {"a": value} if kind is dict else [value]
    return value


# -- the three --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [dict, list])
def test_a_10000_deep_document_is_the_depth_rule_not_a_recursion_error(kind: type) -> None:
    with pytest.raises(ConfigError, match=rf"^source: nested deeper than {MAX_DEPTH} levels, the limit for profwin's inputs$"):
        load_spec(deep(10_000, kind))
    with pytest.raises(ConfigError, match=rf"^data: nested deeper than {MAX_DEPTH} levels"):
        profwin.plugin.plain(deep(MAX_DEPTH + 1, kind))
    assert profwin.plugin.plain(deep(MAX_DEPTH - 1, kind)) == deep(MAX_DEPTH - 1, kind)


def test_a_nul_byte_in_output_dir_is_refused_where_it_is_written(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^output_dir: must be a path: text without NUL bytes \(got '/tmp/a\\x00b'\)$"):
        spec_from_mapping({"window": "1:2", "output_dir": "/tmp/a\0b"})
    with pytest.raises(ConfigError, match=r"^output_dir: must be a path"):
        ProfileSpec(output_dir=Path("a\0b"))
    spec = tmp_path / "nul.json"
    spec.write_text('{"window": "1:2", "output_dir": "/tmp/a\\u0000b"}')
    with pytest.raises(ConfigError, match=r"^output_dir: must be a path"):
        load_spec(spec)


def test_an_unknown_user_is_an_error_in_a_spec_file_too(tmp_path: Path) -> None:
    """A relative output_dir in a file is resolved against the file's folder: `~nouser/x` was
    taken for relative and passed as `<folder>/~nouser/x`."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("window: '1:2'\noutput_dir: ~profwin_no_such_user_xyz/traces\n")
    with pytest.raises(ConfigError, match=r"^output_dir: '~profwin_no_such_user_xyz/traces' starts with .* no such user"):
        load_spec(spec)
    done = subprocess.run([sys.executable, "-m", "profwin", "validate", str(spec)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "output_dir: '~profwin_no_such_user_xyz/traces' starts with '~profwin_no_such_user_xyz'" in done.stderr
    home = tmp_path / "home.yaml"
    home.write_text("window: '1:2'\noutput_dir: ~/traces\n")
    assert load_spec(home).output_dir == Path.home() / "traces"


# -- checked: a parameter's type ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: profwin.render_plan(5, "text"), r"^plan: must be EnginePlan \(got 5\)$"),  # type: ignore[arg-type]
        (lambda: profwin.current_rank(True), r"^rank: must be None or an int in \[0, 2147483647\] \(got True\)$"),  # own=
        (lambda: profwin.backend(None), r"^name: must be str \(got None\)$"),  # type: ignore[arg-type]
        (lambda: spec_from_mapping({1: "x"}), r"^data key 1: must be str \(got 1\)$"),  # type: ignore[dict-item]
        (lambda: profwin.plugin.read_input("x", limit="9", what="file"), r"^limit: must be int \(got '9'\)$"),  # type: ignore[arg-type]
        (lambda: profwin.plugin.fan_out(None, [1]), r"^call: must be callable \(got None\)$"),  # type: ignore[arg-type]
        (lambda: profwin.remote_session(5, "h:1", "1:2"), r"^engine: must be str \| Backend \(got 5\)$"),  # type: ignore[arg-type]
        (lambda: profwin.plugin.open_input(b"x", what="f"), r"^path: must be str \| os.PathLike\[str\] \(got b'x'\)$"),  # type: ignore[arg-type]
        (lambda: profwin.plugin.open_input("a\0b", what="f"), r"^path: must be a path: text without NUL bytes"),
        (lambda: profwin.plugin.open_input("\ud800", what="f"), r"^path: cannot be a file name: surrogates not allowed"),
        (lambda: profwin.plugin.print_json({1, 2}), r"^data: cannot be printed as JSON"),
        (lambda: profwin.plugin.to_json({"a": 1}), r"^model: must be an attrs instance"),
    ],
)
def test_a_bad_argument_names_the_parameter_the_value_and_the_type(call: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        call()


def test_checked_keeps_the_callable_as_it_was() -> None:
    assert profwin.load_spec.__name__ == "load_spec"
    assert "subtree by its dotted path" in (profwin.load_spec.__doc__ or "")
    assert list(inspect.signature(profwin.load_spec).parameters) == ["source", "at"]
    assert getattr(profwin.load_spec, "__profwin_checked__", False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        profwin.load_spec({}, nope=1)  # a call of the wrong shape stays Python's own error


class Engineish(Protocol):
    def plan(self) -> str: ...


@checked
def sample(
    count: int,
    ratio: float,
    mode: Literal["a", "b"],
    names: Sequence[str],
    table: Mapping[str, int],
    pair: tuple[int, str],
    kind: type[Exception],
    engine: Engineish,
    amount: Decimal,
    *rest: int,
    path: str | Path | None = None,
    **extra: str,
) -> str:
    return "ran"


@checked
class Box:
    def __init__(self, size: int, label: str = "") -> None:
        self.size = size


GOOD: dict[str, Any] = {
    "count": 1, "ratio": 2, "mode": "a", "names": ("x",), "table": {"k": 1}, "pair": (1, "x"), "kind": KeyError,
    "engine": object(), "amount": importlib.import_module("decimal").Decimal(1),
}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("count", True, r"^count: must be int \(got True\)$"),
        ("count", 1.0, r"^count: must be int \(got 1.0\)$"),
        ("ratio", "2", r"^ratio: must be float \(got '2'\)$"),
        ("mode", "c", r"^mode: must be 'a' or 'b' \(got 'c'\)$"),
        ("names", "xy", r"^names: must be Sequence\[str\] \(got 'xy'\)$"),
        ("names", ["x", 2], r"^names\[1\]: must be str \(got 2\)$"),
        ("table", {"k": "1"}, r"^table.k: must be int \(got '1'\)$"),
        ("table", {None: 1}, r"^table key None: must be str \(got None\)$"),
        ("pair", (1, 2), r"^pair\[1\]: must be str \(got 2\)$"),
        ("pair", (1,), r"^pair: must be tuple\[int, str\] \(got \(1,\)\)$"),
        ("kind", int, r"^kind: must be type\[Exception\]"),
        ("engine", None, r"^engine: must be Engineish \(got None\)$"),
        ("engine", [], r"^engine: must be Engineish \(got \[\]\)$"),
        ("amount", "1", r"^amount: must be Decimal \(got '1'\)$"),  # imported for type checkers only: imported to check
    ],
)
def test_what_an_annotation_means(name: str, value: object, message: str) -> None:
    assert sample(**GOOD) == "ran"
    with pytest.raises(ConfigError, match=message):
        sample(**{**GOOD, name: value})


def test_var_arguments_a_class_and_a_call_checked_without_making_it() -> None:
    assert sample(*GOOD.values(), 1, 2, path=Path("p"), x="y") == "ran"
    with pytest.raises(ConfigError, match=r"^rest\[1\]: must be int \(got 'two'\)$"):
        sample(*GOOD.values(), 1, "two")
    with pytest.raises(ConfigError, match=r"^x: must be str \(got 5\)$"):
        sample(**GOOD, x=5)
    with pytest.raises(ConfigError, match=r"^path: must be a path: text without NUL bytes"):
        sample(**GOOD, path="a\0b")
    assert Box(3).size == 3
    with pytest.raises(ConfigError, match=r"^size: must be int \(got '3'\)$"):
        Box("3")  # type: ignore[arg-type]
    check_arguments(profwin.load_spec, {"window": "1:2"}, at=None)
    with pytest.raises(ConfigError, match=r"^at: must be str \| None \(got 5\)$"):
        check_arguments(profwin.load_spec, {}, at=5)
    with pytest.raises(ConfigError, match=r"^target: must be a function or a class"):
        checked(5)
    with pytest.raises(ConfigError, match=r"^target: must be a function or a class defined in Python"):
        checked(float)


def test_a_protocol_takes_any_object_but_plain_data(tmp_path: Path) -> None:
    """A test's fake backend (no ``target``, no ``plan_here``) still runs; plain data does not."""

    class Fake:
        name = "fake"

    fake = Fake()
    with pytest.raises(ConfigError, match=r"^engine: must be str \| Backend \(got \[\]\)$"):
        profwin.remote_session([], "h:1", "1:2")  # type: ignore[arg-type]
    assert isinstance(profwin.plugin.session_function(fake, "doc"), type(lambda: None))  # type: ignore[arg-type]


# -- the value quoted in a message ----------------------------------------------------------------


def test_a_value_repr_cannot_show_is_described() -> None:
    assert shown(10**5000) == "<int of 16610 bits>"
    assert shown(deep(100_000, list)) == "<list nested too deep to show>"
    with pytest.raises(ConfigError, match=r"^end must be <= 2147483647 .*got <int of 16610 bits>\)$"):
        Window(1, 10**5000)  # repr() of it raised ValueError inside the error message
