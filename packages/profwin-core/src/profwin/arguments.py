"""Arguments checked where they enter profwin: a public callable's arguments against its type hints.

A public function (or class) of profwin, and of a plugin through :mod:`profwin.plugin`, is
decorated with :func:`checked`. Before its body runs, each argument given is checked against its
parameter's annotation, and a mismatch is a :class:`~profwin.ConfigError` naming the parameter,
the value and the type it must have, instead of a ``TypeError``, ``AttributeError`` or
``RecursionError`` from deep inside. Two rules hold for every argument besides its type:

- nesting: a ``dict``, ``list``, ``tuple`` or ``set`` is at most :data:`MAX_DEPTH` levels deep
  (:func:`check_nesting`, the one bound on nesting, which every spec document passes too), so no
  recursive walk over a user's data can exhaust Python's stack;
- paths: a value given for a path (an annotation naming ``os.PathLike`` or ``Path``) holds no
  NUL byte (:func:`check_path`, which every ``~`` profwin expands passes too).

What an annotation means here: a class is ``isinstance`` (``bool`` is not an ``int``, an ``int``
is a ``float``, a ``str`` is no ``Sequence[str]``, a ``list`` is taken for a ``tuple[X, ...]``);
``None``, unions, ``Literal``, ``type[X]`` and ``Callable`` mean what they say; a protocol takes
any object but plain data (``None``, a number, text, a built-in container), so a partial
implementation or a test's fake that works keeps working; ``Any``, ``object`` and type variables
take anything. Elements of the built-in containers are checked as deep as the annotation goes
(``Mapping[str, int]``: keys and values), never deeper, so a check costs no more than the
annotation's own depth; other mappings and iterables (an OmegaConf node, a generator) are checked
as a whole, never iterated. Annotations are resolved at the first call, once. A name a module
imports for type checkers only (``if TYPE_CHECKING:``, to keep its import cheap) is checked too,
without importing its module unless the value is plain data (which only the named type can say it
takes). A call of the wrong shape (a missing or unknown argument) stays Python's own ``TypeError``.

This module sits in core's foundation layer beside :mod:`profwin.errors`: every other module may use it.
"""

from __future__ import annotations

import ast
import collections.abc
import functools
import importlib
import inspect
import os
import sys
import types
import typing
import warnings
from collections.abc import Callable
from pathlib import PurePath
from typing import Any, TypeVar

from profwin.errors import ConfigError, shown

__all__ = ["MAX_DEPTH", "check_arguments", "check_nesting", "check_path", "checked", "warn"]

MAX_DEPTH = 100
"""Deepest nesting of dicts, lists, tuples and sets profwin takes, in an argument or a spec document."""

T = TypeVar("T")

_CONTAINERS = (dict, list, tuple, set, frozenset, types.MappingProxyType)
_TEXT = (str, bytes, bytearray)
_PLAIN_DATA = (type(None), bool, int, float, complex, *_TEXT, *_CONTAINERS)
_UNIONS = (typing.Union, types.UnionType)


@typing.overload
def checked(target: T) -> T: ...
@typing.overload
def checked(*, own: tuple[str, ...]) -> Callable[[T], T]: ...


def checked(target: Any = None, *, own: tuple[str, ...] = ()) -> Any:
    """``target`` (a function, or a class: its ``__init__``) with its arguments checked at each
    call, as the module docstring says; otherwise unchanged (name, signature, docstring).

    ``@checked(own=("rank",))``: the callable checks the type of those parameters itself, with a
    fuller rule than their annotation says (a range, a URL, the field a value was read from), so
    their type is left to it; the nesting and path rules still hold for them."""
    if target is None:
        return functools.partial(checked, own=own)
    if inspect.isclass(target):
        init = _wrap(target.__init__, sys.modules[target.__module__].__dict__, own)
        try:
            target.__init__ = init  # type: ignore[method-assign]
        except TypeError:  # a built-in class
            raise ConfigError(f"must be a function or a class defined in Python (got {shown(target)})", path="target") from None
        return target
    if not callable(target):
        raise ConfigError(f"must be a function or a class (got {shown(target)})", path="target")
    return _wrap(target, _globals(target), own)


def check_arguments(function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Check a call of ``function`` with ``args`` and ``kwargs`` as :func:`checked` does, without
    making it: a :class:`~profwin.ConfigError` naming the first bad argument, else nothing."""
    _Parameters(inspect.signature(function), _globals(function)).check(args, kwargs)


def _globals(function: Callable[..., Any]) -> dict[str, Any]:
    """The namespace ``function``'s annotations were written in (under its decorators, if any)."""
    namespace: dict[str, Any] = getattr(inspect.unwrap(function), "__globals__", {})
    return namespace


def _wrap(function: Callable[..., Any], namespace: dict[str, Any], own: tuple[str, ...] = ()) -> Callable[..., Any]:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a built-in without a signature
        raise ConfigError(f"must be a function with a signature (got {shown(function)})", path="target") from None
    parameters: list[_Parameters] = []  # hints resolved at the first call: they may name classes defined later

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not parameters:
            parameters.append(_Parameters(signature, namespace, own))
        parameters[0].check(args, kwargs)
        return function(*args, **kwargs)

    call.__profwin_checked__ = True  # type: ignore[attr-defined]
    return call


class _Parameters:
    """A callable's parameters with their resolved annotations."""

    def __init__(self, signature: inspect.Signature, namespace: dict[str, Any], own: tuple[str, ...] = ()) -> None:
        self.signature = signature
        self.hints = {name: _resolve(p.annotation, namespace) for name, p in signature.parameters.items()}
        self.own = own

    def check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:
            return  # a call of the wrong shape: the function raises Python's own TypeError for it
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            hint = self.hints.get(name)
            if kind is inspect.Parameter.VAR_POSITIONAL:
                items = [(f"{name}[{i}]", item) for i, item in enumerate(value)]
            elif kind is inspect.Parameter.VAR_KEYWORD:
                items = [(key, item) for key, item in value.items()]
            else:
                items = [(name, value)]
            for path, item in items:
                _check_value(item, hint, path, typed=name not in self.own)


def _check_value(value: Any, hint: Any, path: str, *, typed: bool = True) -> None:
    """The checks of one argument (see the module docstring); ``hint`` ``None``: nothing to check
    its type against; ``typed=False``: the callable checks the type itself (``checked(own=...)``)."""
    if hint is not None:
        problem = _problem(value, hint, path) if typed else None
        if problem is not None:
            where, wanted, got = problem
            raise ConfigError(f"must be {wanted} (got {shown(got)})", path=where)
        if _names_path(hint) and isinstance(value, (str, os.PathLike)):
            check_path(value, what=path)
    if isinstance(value, _CONTAINERS):
        check_nesting(value, path)


def check_nesting(data: Any, path: str, *, max_nodes: int | None = None) -> None:
    """Refuse ``data`` nested deeper than :data:`MAX_DEPTH` levels of mappings, lists, tuples and
    sets, or holding more than ``max_nodes`` values (``None``: any number), with a
    :class:`~profwin.ConfigError` at ``path``. Walked without recursion: this is the one bound on
    nesting, which every argument of a checked callable and every spec document
    (:mod:`profwin.inputs`) passes, so no recursive walk after it can exhaust Python's stack."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise ConfigError(f"nested deeper than {MAX_DEPTH} levels, the limit for profwin's inputs", path=path)
        if max_nodes is not None and nodes > max_nodes:
            raise ConfigError(f"holds more than {max_nodes:,} values, the limit for a spec", path=path)
        if isinstance(value, (dict, types.MappingProxyType)):
            stack.extend((child, depth + 1) for child in value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend((child, depth + 1) for child in value)


def check_path(path: str | os.PathLike[str], *, what: str) -> str:
    """``path`` as text, if it can name a file; else a :class:`~profwin.ConfigError` at ``what``:
    a value that is not text or ``os.PathLike`` text, a NUL byte (no file name holds one, and the
    system call refuses it with a ``ValueError``) or text the file system cannot encode (a lone
    surrogate such as ``"\\ud800"``: ``UnicodeEncodeError``)."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if not isinstance(text, str) or "\0" in text:
        raise ConfigError(f"must be a path: text without NUL bytes (got {shown(path)})", path=what)
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"cannot be a file name: {exc.reason} at character {exc.start} (got {shown(text)})", path=what
        ) from None
    return text


def _resolve(annotation: Any, namespace: dict[str, Any]) -> Any:
    """The annotation as an object; ``None`` when it says nothing or names what cannot be found.
    A name imported under ``if TYPE_CHECKING:`` (to keep a module's import cheap) is imported
    here, at the first call. ``Name[...]`` that cannot be subscripted at run time
    (``attrs.Attribute[Any]`` on older attrs) is ``Name``."""
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        text = annotation
        try:
            annotation = eval(text, namespace, _TypeCheckingNames(namespace))  # as typing.get_type_hints does
        except Exception:
            base, bracket, _ = text.partition("[")
            if not bracket or not text.endswith("]") or _closing_bracket(text, len(base)) != len(text) - 1:
                return None
            return _resolve(base, namespace)
    return None if annotation in (Any, object) else annotation


class _TypeCheckingNames(dict[str, Any]):
    """The names a module imports under ``if TYPE_CHECKING:``, for its annotations: the object
    when its module is imported, else a :class:`_Deferred` stand-in."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        super().__init__()
        self.imports = _type_checking_imports(namespace.get("__name__", ""))

    def __missing__(self, name: str) -> Any:
        module, attribute = self.imports[name]  # KeyError: not there at all (the annotation is not checked)
        if module in sys.modules:
            return _imported(module, attribute)
        return type(name, (_Deferred,), {"home": (module, attribute)})


class _Deferred:
    """A name imported for type checkers only, whose module was not imported yet: checking does not
    import it (a module imports it lazily to stay cheap) unless a value is plain data, which only
    the named type itself can say it takes (a ``Literal`` alias takes text, a class does not)."""

    home: tuple[str, str]

    @classmethod
    def resolve(cls, value: Any) -> Any:
        """The named object, or ``None`` (anything goes): ``value`` is no plain data, so it may be an
        implementation of a protocol of that module, or of a class of it, which would have imported it."""
        module, attribute = cls.home
        if module not in sys.modules and not isinstance(value, _PLAIN_DATA):
            return None
        return _imported(module, attribute)


def _imported(module: str, attribute: str) -> Any:
    found = importlib.import_module(module)
    return getattr(found, attribute) if attribute else found


@functools.cache
def _type_checking_imports(module: str) -> dict[str, tuple[str, str]]:
    """``name -> (module, attribute)`` (attribute ``""``: the module) for each import under a
    top-level ``if TYPE_CHECKING:`` of ``module``'s source."""
    try:
        tree = ast.parse(inspect.getsource(sys.modules[module]))
    except (KeyError, OSError, TypeError, SyntaxError):
        return {}
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                    found.update({a.asname or a.name: (statement.module, a.name) for a in statement.names})
                elif isinstance(statement, ast.Import):
                    found.update({a.asname or a.name: (a.name, "") for a in statement.names if a.asname or "." not in a.name})
    return found


def _closing_bracket(text: str, start: int) -> int:
    """Where the bracket opened at ``text[start]`` closes (-1: never)."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            return i
    return -1


def _problem(value: Any, hint: Any, path: str) -> tuple[str, str, Any] | None:
    """Where ``value`` breaks ``hint``: (path, what it must be, the value there); ``None`` if it does not."""
    if inspect.isclass(hint) and issubclass(hint, _Deferred):
        named = hint.resolve(value)
        return None if named is None else _problem(value, named, path)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is None or hint is type(None):
        return None if value is None else (path, "None", value)
    if isinstance(hint, TypeVar) or hint in (Any, object) or isinstance(hint, (str, typing.ForwardRef)):
        return None
    if origin in _UNIONS:
        return None if any(_problem(value, member, path) is None for member in args) else (path, _describe(hint), value)
    if origin is typing.Literal:
        return None if any(value == a and type(value) is type(a) for a in args) else (path, _describe(hint), value)
    if origin is typing.Annotated:
        return _problem(value, args[0], path)
    if origin is type:
        wanted = args[0] if args else object
        fits = inspect.isclass(value) and (not inspect.isclass(wanted) or issubclass(value, wanted))
        return None if fits else (path, _describe(hint), value)
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        return None if callable(value) else (path, "callable", value)
    if origin is not None:
        return _container_problem(value, hint, origin, args, path)
    if not inspect.isclass(hint):
        return None  # a typing construct with no run-time test (NewType, ParamSpec...)
    return None if _is_instance(value, hint) else (path, _describe(hint), value)


def _is_instance(value: Any, cls: type) -> bool:
    if getattr(cls, "_is_protocol", False):
        # Duck types: a fake or a partial implementation that works must keep working, so only
        # plain data (which implements no protocol of profwin's) is refused.
        return not isinstance(value, _PLAIN_DATA)
    if cls is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if cls is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, cls)


def _container_problem(value: Any, hint: Any, origin: Any, args: tuple[Any, ...], path: str) -> tuple[str, str, Any] | None:
    if not inspect.isclass(origin):
        return None
    any_length = origin is tuple and len(args) == 2 and args[1] is Ellipsis
    if not (_is_instance(value, origin) or (any_length and isinstance(value, list))):
        return (path, _describe(hint), value)  # a list is taken for a tuple[X, ...]: both are "some Xs" to a caller
    if isinstance(value, _TEXT) and origin not in _TEXT:
        return (path, _describe(hint), value)  # text is a sequence of characters, never what a Sequence[str] means
    if not args or not isinstance(value, _CONTAINERS):
        return None  # only built-in containers are looked into: iterating another may consume or resolve it
    if isinstance(value, (dict, types.MappingProxyType)) and issubclass(origin, collections.abc.Mapping):
        key_hint, value_hint = args if len(args) == 2 else (Any, Any)
        for key, item in value.items():
            problem = _problem(key, key_hint, f"{path} key {shown(key)}") or _problem(item, value_hint, f"{path}.{key}")
            if problem is not None:
                return problem
        return None
    if origin is tuple and not any_length:
        if args == ((),):
            args = ()
        if len(value) != len(args):
            return (path, _describe(hint), value)
        pairs = list(zip(value, args, strict=True))
    else:
        pairs = [(item, args[0]) for item in value]
    for i, (item, item_hint) in enumerate(pairs):
        problem = _problem(item, item_hint, f"{path}[{i}]")
        if problem is not None:
            return problem
    return None


def _names_path(hint: Any) -> bool:
    """Whether ``hint`` says a path: ``os.PathLike``, ``Path`` or a union holding one."""
    if typing.get_origin(hint) in _UNIONS:
        return any(_names_path(member) for member in typing.get_args(hint))
    cls = typing.get_origin(hint) or hint
    return inspect.isclass(cls) and issubclass(cls, (os.PathLike, PurePath))


def _describe(hint: Any) -> str:
    """An annotation as a reader writes it: ``str | os.PathLike[str] | None``, ``Mapping[str, Any]``."""
    if hint is None or hint is type(None):
        return "None"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNIONS:
        return " | ".join(_describe(member) for member in args)
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if origin is not None and args:
        name = "os.PathLike" if origin is os.PathLike else getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join('...' if a is Ellipsis else _describe(a) for a in args)}]"
    if inspect.isclass(hint):
        return hint.__name__
    return str(hint).replace("typing.", "")


_CHECKER_CODE = _wrap(lambda: None, {}).__code__
"""The code of every :func:`checked` wrapper (one nested function, so one code object)."""


@checked
def warn(message: str, category: type[Warning] = UserWarning, *, stacklevel: int = 1) -> None:
    """``warnings.warn(message, category, stacklevel=stacklevel)``, with ``stacklevel`` counted as
    the code calling this sees its callers: the frames of :func:`checked`'s wrappers are not
    counted, so a warning from a checked function points at the line that called it (the user's),
    never at this module. The way profwin and its plugins warn with a ``stacklevel``."""
    frame, level = sys._getframe(1), 1

    def past_checkers() -> None:
        nonlocal frame, level
        while frame.f_code is _CHECKER_CODE and frame.f_back is not None:
            frame, level = frame.f_back, level + 1

    past_checkers()  # this function's own checker
    for _ in range(max(stacklevel, 1) - 1):
        if frame.f_back is None:
            break
        frame, level = frame.f_back, level + 1
        past_checkers()
    warnings.warn(message, category, stacklevel=level + 1)
