"""Arguments checked where they enter profwin (``profwin.arguments``): a public callable given an
argument of the wrong type raises an ``ArgumentTypeError`` (a ``TypeError`` of profwin's family)
naming the parameter, the value and the type, and one that breaks a rule a ``ConfigError``, never a
``TypeError``, ``AttributeError`` or ``RecursionError`` from inside; nesting is bounded in one
place; paths are strict about NUL bytes and unknown ``~user``; the checks need no module source.
Real files, real specs, the real command line."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import itertools
import pkgutil
import py_compile
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pytest

import profwin
import profwin.plugin
import profwin.plugin.cli
import profwin.plugin.files
import profwin.plugin.trainers
from profwin import ConfigError, ProfileSpec, Window, load_spec, spec_from_mapping
from profwin.arguments import MAX_DEPTH, check_arguments, checked
from profwin.errors import ArgumentTypeError, ProfwinError, shown

if TYPE_CHECKING:
    import decimal  # a module imported for type checkers only: hints name it by its dotted path


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
        profwin.plugin.trainers.plain(deep(MAX_DEPTH + 1, kind))
    assert profwin.plugin.trainers.plain(deep(MAX_DEPTH - 1, kind)) == deep(MAX_DEPTH - 1, kind)


def test_a_nul_byte_in_output_dir_is_refused_where_it_is_written(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^output_dir: must be a path: text without NUL bytes \(got '/tmp/a\\x00b'\)$"):
        spec_from_mapping({"window": "1:2", "output_dir": "/tmp/a\0b"})
    with pytest.raises(ConfigError, match=r"^output_dir: must be a path"):
        ProfileSpec(output_dir=Path("a\0b"))
    spec = tmp_path / "nul.json"
    spec.write_text('{"window": "1:2", "output_dir": "/tmp/a\\u0000b"}')
    with pytest.raises(ConfigError, match=r"^output_dir: must be a path"):
        load_spec(spec)


def test_a_path_like_that_gives_no_text_is_refused_as_a_path() -> None:
    """``os.fspath`` raises ``TypeError`` for an ``__fspath__`` giving an int, and whatever the
    ``__fspath__`` of a broken one raises: both are a value that is not a path."""

    class BadPath:
        def __init__(self, value: Any) -> None:
            self.value = value

        def __fspath__(self) -> Any:
            if isinstance(self.value, BaseException):
                raise self.value
            return self.value

    for value in (5, b"bytes", RuntimeError("no path")):
        with pytest.raises(ConfigError, match=r"^path: must be a path: text without NUL bytes"):
            profwin.plugin.files.read_input(BadPath(value), limit=10, what="x")  # type: ignore[arg-type]


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


def test_a_wrong_type_is_a_type_error_of_profwins_family_and_a_broken_rule_a_config_error() -> None:
    assert issubclass(ArgumentTypeError, TypeError)
    assert issubclass(ArgumentTypeError, ProfwinError)
    assert not issubclass(ArgumentTypeError, ValueError)
    with pytest.raises(TypeError, match=r"^name: must be str \(got None\)$"):
        profwin.backend(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^path: must be a path"):
        profwin.plugin.files.open_input("a\0b", what="f")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: profwin.render_plan(5, "text"), ArgumentTypeError, r"^plan: must be EnginePlan \(got 5\)$"),  # type: ignore[arg-type]
        (
            lambda: profwin.current_rank(True),
            ConfigError,
            r"^rank: must be None or an int in \[0, 2147483647\] \(got True\)$",
        ),  # own=
        (lambda: profwin.backend(None), ArgumentTypeError, r"^name: must be str \(got None\)$"),  # type: ignore[arg-type]
        # A spec document's key that is not a string is the document's error, named as an unknown key.
        (lambda: spec_from_mapping({1: "x"}), ConfigError, r"^unknown key 1 \(valid keys: window, "),
        (
            lambda: profwin.plugin.files.read_input("x", limit="9", what="file"),
            ArgumentTypeError,
            r"^limit: must be int \(got '9'\)$",
        ),  # type: ignore[arg-type]
        (lambda: profwin.plugin.fan_out(None, [1]), ArgumentTypeError, r"^call: must be callable \(got None\)$"),  # type: ignore[arg-type]
        (lambda: profwin.remote_session(5, "h:1", "1:2"), ArgumentTypeError, r"^engine: must be str \| Backend \(got 5\)$"),  # type: ignore[arg-type]
        (
            lambda: profwin.plugin.files.open_input(b"x", what="f"),
            ArgumentTypeError,
            r"^path: must be str \| os.PathLike\[str\] \(got b'x'\)$",
        ),  # type: ignore[arg-type]
        (
            lambda: profwin.plugin.files.open_input("a\0b", what="f"),
            ConfigError,
            r"^path: must be a path: text without NUL bytes",
        ),
        (
            lambda: profwin.plugin.files.open_input("\ud800", what="f"),
            ConfigError,
            r"^path: cannot be a file name: surrogates not allowed",
        ),
        (
            lambda: profwin.plugin.files.open_input("d/" + "x" * 256, what="f"),
            ConfigError,
            r"^path: cannot be a file name: a name in it is 256 bytes, over the 255 a file system allows",
        ),  # the system call's OSError "File name too long", said before any call
        (
            lambda: profwin.plugin.files.open_input("d/" * 2048, what="f"),
            ConfigError,
            r"^path: cannot be a file name: it is 4,096 bytes, over the 4,095 a system call takes",
        ),
        (
            lambda: profwin.plugin.cli.how_to_view(["ok", "a\0b"]),
            ConfigError,
            r"^paths\[1\]: must be a path: text without NUL bytes",
        ),  # each item of a collection of paths (Iterable[str | Path])
        (lambda: profwin.plugin.cli.print_json({1, 2}), ConfigError, r"^data: cannot be printed as JSON"),
        (lambda: profwin.plugin.to_json({"a": 1}), ConfigError, r"^model: must be an attrs instance"),
    ],
)
def test_a_bad_argument_names_the_parameter_the_value_and_the_type(call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        call()
    assert type(raised.value) is error
    assert "\n" not in str(raised.value)


def test_checked_keeps_the_callable_as_it_was() -> None:
    assert profwin.load_spec.__name__ == "load_spec"
    assert "subtree by its dotted path" in (profwin.load_spec.__doc__ or "")
    assert list(inspect.signature(profwin.load_spec).parameters) == ["source", "at"]
    assert getattr(profwin.load_spec, "__profwin_checked__", False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        profwin.load_spec({}, nope=1)  # a call of the wrong shape stays Python's own error


def released() -> memoryview:
    view = memoryview(b"ab")
    view.release()
    return view


class Ambiguous:
    """An array-like, as numpy's arrays are: ``==`` answers with another one, whose truth is an error."""

    def __eq__(self, other: object) -> Any:
        return Ambiguous()

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise ValueError("the truth value of an array with more than one element is ambiguous")

    def __repr__(self) -> str:
        return "Ambiguous()"


class Engineish(Protocol):
    name: str

    def plan(self) -> str: ...


class Engine:
    def plan(self) -> str:
        return "plan"


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
    amount: decimal.Decimal,
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
    "engine": Engine(), "amount": importlib.import_module("decimal").Decimal(1),
}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("count", True, r"^count: must be int \(got True\)$"),
        ("count", 1.0, r"^count: must be int \(got 1.0\)$"),
        ("ratio", "2", r"^ratio: must be float \(got '2'\)$"),
        ("ratio", False, r"^ratio: must be float \(got False\)$"),
        ("names", "xy", r"^names: must be Sequence\[str\] \(got 'xy'\)$"),
        ("names", ["x", 2], r"^names\[1\]: must be str \(got 2\)$"),
        ("names", ["x"] * 50 + [None], r"^names\[50\]: must be str \(got None\)$"),  # every item, not one drawn at random
        ("table", {"k": "1"}, r"^table.k: must be int \(got '1'\)$"),
        ("table", {"k": 1, "j": True}, r"^table.j: must be int \(got True\)$"),
        ("table", {None: 1}, r"^table key None: must be str \(got None\)$"),
        ("pair", (1, 2), r"^pair\[1\]: must be str \(got 2\)$"),
        ("pair", (1,), r"^pair: must be tuple\[int, str\] \(got \(1,\)\)$"),
        ("kind", int, r"^kind: must be type\[Exception\]"),
        ("engine", None, r"^engine: must be Engineish \(got None\)$"),
        ("engine", [], r"^engine: must be Engineish \(got \[\]\)$"),  # a protocol takes any object but plain data
        (
            "engine",
            print,
            r"^engine: must be Engineish \(got <built-in function print>\)$",
        ),  # ...and one with none of its members
        ("engine", float, r"^engine: must be Engineish \(got <class 'float'>\)$"),
        ("engine", PurePosixPath("x"), r"^engine: must be Engineish \(got PurePosixPath\('x'\)\)$"),  # its name is no engine's
        ("amount", "1", r"^amount: must be Decimal \(got '1'\)$"),  # imported for type checkers only: imported to check
        ("engine", Path, r"^engine: must be Engineish \(got <class 'pathlib.Path'>\)$"),  # a class has its members too
        ("engine", importlib, r"^engine: must be Engineish \(got <module 'importlib'"),  # an implementation is an object
        # Collections other than the built-in containers are looked into as well (not consumed).
        ("names", range(3), r"^names\[0\]: must be str \(got 0\)$"),
        ("names", range(10**18), r"^names\[0\]: must be str \(got 0\)$"),  # its first items only, at once
        ("names", memoryview(b"ab"), r"^names\[0\]: must be str \(got 97\)$"),
        ("names", released(), r"^names: must be Sequence\[str\] \(got <released memory at "),  # unreadable: none of its Xs
        ("mode", Ambiguous(), r"^mode: must be 'a' or 'b' \(got Ambiguous\(\)\)$"),  # its == gives no bool
    ],
)
def test_what_an_annotation_means(name: str, value: object, message: str) -> None:
    assert sample(**GOOD) == "ran"
    with pytest.raises(ArgumentTypeError, match=message):
        sample(**{**GOOD, name: value})


def test_a_protocol_takes_a_partial_implementation() -> None:
    """A fake with one of a protocol's members works where it is used: it is not refused up front."""

    class Partial:
        plan = "a plan"

    assert sample(**{**GOOD, "engine": Partial()}) == "ran"


def test_a_literal_given_another_value_of_its_type_is_a_broken_rule() -> None:
    """Like Python's own ``ValueError`` for a choice: 'c' is text, only not one of the texts."""
    with pytest.raises(ConfigError, match=r"^mode: must be 'a' or 'b' \(got 'c'\)$"):
        sample(**{**GOOD, "mode": "c"})
    with pytest.raises(ArgumentTypeError, match=r"^mode: must be 'a' or 'b' \(got 3\)$"):
        sample(**{**GOOD, "mode": 3})


def test_an_iterator_is_checked_item_by_item_as_the_callee_reads_it() -> None:
    """Looking into an iterator before the call would consume it: the callee gets one that checks
    each item as it is read, so a generator of paths works, lazily, and a bad item is profwin's
    error at its index."""
    read: list[int] = []

    @checked
    def total(items: Iterable[int] | None, *, first: int = 3) -> int:
        return sum(itertools.islice(items or (), first))

    def counting() -> Iterator[int]:
        for n in itertools.count():
            read.append(n)
            yield n

    assert total(counting()) == 3
    assert read == [0, 1, 2]  # an endless one, read as far as the callee reads
    assert total(iter([1, 2])) == 3
    assert total([4]) == 4
    assert total(None) == 0
    with pytest.raises(ArgumentTypeError, match=r"^items\[1\]: must be int \(got 'x'\)$"):
        total(n for n in (1, "x"))
    with pytest.raises(ArgumentTypeError, match=r"^items\[0\]: must be int \(got None\)$"):
        total(items=iter([None]))


def test_var_arguments_a_class_and_a_call_checked_without_making_it() -> None:
    assert sample(*GOOD.values(), 1, 2, path=Path("p"), x="y") == "ran"
    with pytest.raises(ArgumentTypeError, match=r"^rest\[1\]: must be int \(got 'two'\)$"):
        sample(*GOOD.values(), 1, "two")
    with pytest.raises(ArgumentTypeError, match=r"^x: must be str \(got 5\)$"):
        sample(**GOOD, x=5)
    with pytest.raises(ConfigError, match=r"^path: must be a path: text without NUL bytes"):
        sample(**GOOD, path="a\0b")
    assert Box(3).size == 3
    with pytest.raises(ArgumentTypeError, match=r"^size: must be int \(got '3'\)$"):
        Box("3")  # type: ignore[arg-type]
    check_arguments(profwin.load_spec, {"window": "1:2"}, at=None)
    with pytest.raises(ArgumentTypeError, match=r"^at: must be str \| None \(got 5\)$"):
        check_arguments(profwin.load_spec, {}, at=5)
    with pytest.raises(ArgumentTypeError, match=r"^target: must be a function or a class"):
        checked(5)
    with pytest.raises(ArgumentTypeError, match=r"^target: must be a function or a class defined in Python"):
        checked(float)


def test_a_hint_that_cannot_be_checked_is_an_error_at_the_first_call_never_a_check_skipped() -> None:
    namespace: dict[str, Any] = {}
    source = (
        "from __future__ import annotations\n"
        "from collections.abc import Sequence\n"
        "def missing(x: Missing) -> None: ...\n"
        "def forward(x: Sequence['Later']) -> None: ...\n"
        "def dotted(x: str | nowhere_at_all.Thing) -> None: ...\n"
    )
    exec(source, namespace)
    with pytest.raises(TypeError, match=r"profwin cannot check missing\(x\): its annotation 'Missing' fails .*module\.Missing"):
        checked(namespace["missing"])(1)
    with pytest.raises(TypeError, match=r"profwin cannot check forward\(x\): .*'Later' has no run-time test"):
        checked(namespace["forward"])(["a"])
    dotted = checked(namespace["dotted"])
    dotted("text")  # the dotted member is needed for no str: its module is not imported
    with pytest.raises(ModuleNotFoundError, match="nowhere_at_all"):
        dotted(5)


def test_a_dotted_hint_imports_its_module_only_for_a_value_that_needs_it() -> None:
    """``RolloutProfiler(engine: str | profwin.engine.Backend)``: a backend's name imports nothing."""
    code = (
        "import sys, profwin\n"
        "profwin.render_plan.__profwin_checked__()\n"
        "print('profwin.engine' in sys.modules)\n"
        "try:\n    profwin.render_plan(5, 'text')\nexcept TypeError as exc:\n    print(exc)\n"
        "print('profwin.engine' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == ["False", "plan: must be EnginePlan (got 5)", "True"]


def test_a_call_of_the_wrong_shape_is_pythons_own_error() -> None:
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'size'") as raised:
        Box()  # type: ignore[call-arg]
    assert not isinstance(raised.value, ProfwinError)
    with pytest.raises(TypeError, match=r"got multiple values for argument 'count'"):
        sample(1, **GOOD)


def test_every_checked_callable_of_core_resolves_its_hints() -> None:
    """Each hint resolves (an object, or a dotted path to a module imported for type checkers
    only), for every checked function and class of core: built as at a first call."""
    built = []
    for info in pkgutil.walk_packages(profwin.__path__, "profwin."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            target = value.__init__ if inspect.isclass(value) else value
            checks = getattr(target, "__profwin_checked__", None)
            if callable(checks) and getattr(value, "__module__", None) == info.name:
                assert checks().hints is not None
                built.append(value)
    assert len(built) >= 60


def test_the_checks_need_no_module_source(tmp_path: Path) -> None:
    """A package imported from a zip of compiled files only (a zipapp, a .pyc-only install): no
    source for ``inspect`` or ``ast`` to read, and every check holds, a module imported for type
    checkers only included."""
    package = tmp_path / "src" / "zipped_plugin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            from __future__ import annotations

            from collections.abc import Sequence
            from typing import TYPE_CHECKING

            from profwin.plugin import checked

            if TYPE_CHECKING:
                import decimal

            @checked
            def total(names: Sequence[str], amount: decimal.Decimal, *, count: int = 1) -> str:
                return f"{len(names)} {amount} {count}"
            """
        )
    )
    archive = tmp_path / "plugin.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        compiled = py_compile.compile(str(package / "__init__.py"), cfile=str(tmp_path / "__init__.pyc"), doraise=True)
        zipped.write(compiled, "zipped_plugin/__init__.pyc")
    code = textwrap.dedent(
        f"""
        import decimal, inspect, sys
        sys.path.insert(0, {str(archive)!r})
        import zipped_plugin
        from profwin.errors import ArgumentTypeError
        assert zipped_plugin.__file__.endswith(".pyc"), zipped_plugin.__file__
        try:
            inspect.getsource(zipped_plugin)
        except OSError:
            print("no source")
        print(zipped_plugin.total(["a", "b"], decimal.Decimal(2)))
        cases = [
            ((["a", 2], decimal.Decimal(1)), {{}}),
            (("ab", decimal.Decimal(1)), {{}}),
            ((["a"], "1"), {{}}),
            ((["a"], decimal.Decimal(1)), {{"count": True}}),
        ]
        for args, kwargs in cases:
            try:
                zipped_plugin.total(*args, **kwargs)
            except ArgumentTypeError as exc:
                print(exc)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "no source",
        "2 2 1",
        "names[1]: must be str (got 2)",
        "names: must be Sequence[str] (got 'ab')",
        "amount: must be Decimal (got '1')",
        "count: must be int (got True)",
    ]


# -- the value quoted in a message ----------------------------------------------------------------


def test_a_value_repr_cannot_show_is_described() -> None:
    class NoRepr:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert shown(NoRepr()) == "<NoRepr whose repr() fails: RuntimeError>"
    assert shown(10**5000) == "<int of 16610 bits>"
    assert shown(deep(100_000, list)) == "<list nested too deep to show>"
    with pytest.raises(ConfigError, match=r"^end must be <= 2147483647 .*got <int of 16610 bits>\)$"):
        Window(1, 10**5000)  # repr() of it raised ValueError inside the error message


def test_a_checked_coroutine_function_stays_one() -> None:
    """Ray makes an actor async by its methods being coroutine functions (``profwin_ray.actor_call``
    goes on an actor's class): checking must not turn one into a plain function."""

    @checked
    async def call(fn: Callable[..., Any], *args: int) -> Any:
        return fn(*args)

    assert inspect.iscoroutinefunction(call)
    assert asyncio.run(call(lambda x: x + 1, 2)) == 3
    with pytest.raises(ArgumentTypeError, match=r"^fn: must be callable \(got 'nope'\)$"):
        asyncio.run(call("nope"))

    @checked
    async def total(items: Iterable[int]) -> int:
        return sum(items)

    assert asyncio.run(total(n for n in (1, 2))) == 3  # an iterator is checked as it is read here too
    with pytest.raises(ArgumentTypeError, match=r"^items\[1\]: must be int \(got 'x'\)$"):
        asyncio.run(total(n for n in (1, "x")))
