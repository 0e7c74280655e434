"""Arguments checked where they enter profwin: a public callable's arguments against its type hints.

How it works, and why: docs/internals.md, ``profwin.arguments``.
"""

from __future__ import annotations

import builtins
import collections.abc
import functools
import importlib
import inspect
import itertools
import os
import re
import sys
import types
import typing
import warnings
from collections.abc import Callable
from pathlib import PurePath
from typing import Any, TypeVar

from profwin.errors import ArgumentTypeError, ConfigError, shown

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
    call, as docs/internals.md says; otherwise unchanged (name, signature, docstring).

    ``@checked(own=("rank",))``: the callable checks the type of those parameters itself, with a
    fuller rule than their annotation says (a range, a URL, the field a value was read from), so
    their type is left to it; the nesting and path rules still hold for them."""
    if target is None:
        return functools.partial(checked, own=own)
    if inspect.isclass(target):
        if not inspect.isfunction(target.__init__):  # object's own, or a built-in class's
            raise ArgumentTypeError(f"must be a function or a class defined in Python (got {shown(target)})", path="target")
        target.__init__ = _wrap(target.__init__, vars(sys.modules[target.__module__]), own)  # type: ignore[method-assign]
        return target
    if not callable(target):
        raise ArgumentTypeError(f"must be a function or a class (got {shown(target)})", path="target")
    try:
        inspect.signature(target)
    except (TypeError, ValueError):  # a built-in without a signature
        raise ArgumentTypeError(f"must be a function with a signature (got {shown(target)})", path="target") from None
    return _wrap(target, _globals(target), own)


def check_arguments(function: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Check a call of ``function`` with ``args`` and ``kwargs`` as :func:`checked` does, without
    making it: the error for the first bad argument, else nothing."""
    checks = getattr(function, "__profwin_checked__", None)
    (checks() if callable(checks) else _Parameters(function, _globals(function))).check(args, kwargs)


def _globals(function: Callable[..., Any]) -> dict[str, Any]:
    """The namespace ``function``'s annotations were written in (under its decorators, if any)."""
    namespace: dict[str, Any] = getattr(inspect.unwrap(function), "__globals__", {})
    return namespace


def _wrap(function: Callable[..., Any], namespace: dict[str, Any], own: tuple[str, ...] = ()) -> Callable[..., Any]:
    built: list[_Parameters] = []

    def checks() -> _Parameters:
        """The callable's parameters with their hints, resolved at the first call: they may name
        classes defined after it."""
        if not built:
            built.append(_Parameters(function, namespace, own))
        return built[0]

    if inspect.iscoroutinefunction(function):
        # Still a coroutine function to whoever asks (Ray makes an actor async by its methods).
        @functools.wraps(function)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = (built[0] if built else checks()).check(args, kwargs)
            return await function(*args, **kwargs)

        call_async.__profwin_checked__ = checks  # type: ignore[attr-defined]
        return call_async

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = (built[0] if built else checks()).check(args, kwargs)
        return function(*args, **kwargs)

    call.__profwin_checked__ = checks  # type: ignore[attr-defined]
    return call


class _Parameters:
    """A callable's parameters with their resolved annotations, and where each argument goes."""

    def __init__(self, function: Callable[..., Any], namespace: dict[str, Any], own: tuple[str, ...] = ()) -> None:
        signature = inspect.signature(function)
        where = getattr(function, "__qualname__", "the callable")
        self.hints = {
            name: _resolve(p.annotation, namespace, f"{where}({name})", own=name in own)
            for name, p in signature.parameters.items()
        }
        self.typed = {name: name not in own for name in self.hints}
        self.paths = {name: _path_flags(hint) for name, hint in self.hints.items()}
        self.lazy = {  # parameter -> (item hint, its path flags): for an iterator given to it
            name: (item, _path_flags(item))
            for name, hint in self.hints.items()
            if name not in own and (item := _lazy_items(hint)) is not None
        }
        kinds = inspect.Parameter
        self.positions = [
            n for n, p in signature.parameters.items() if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)
        ]
        self.keywords = {n for n, p in signature.parameters.items() if p.kind is not kinds.POSITIONAL_ONLY}
        self.var_args = next((n for n, p in signature.parameters.items() if p.kind is kinds.VAR_POSITIONAL), None)
        self.var_kwargs = next((n for n, p in signature.parameters.items() if p.kind is kinds.VAR_KEYWORD), None)

    def check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Each argument against its parameter's hint; an argument no parameter takes is left to
        the call itself (Python's own ``TypeError``). Returns the arguments to call with: those
        given, but an iterator given for an ``Iterable[X]`` is handed on checking each item as it
        is read (looking into it here would consume it)."""
        count = len(self.positions)
        lazy = self.lazy
        swapped: dict[int | str, Any] = {}
        for i, value in enumerate(args):
            name = self.positions[i] if i < count else self.var_args
            if name is not None:
                label = name if i < count else f"{name}[{i - count}]"
                _check_value(value, self.hints[name], label, typed=self.typed[name], names_path=self.paths[name])
                if name in lazy and isinstance(value, collections.abc.Iterator):
                    swapped[i] = _checked_items(value, *lazy[name], label)
        for key, value in kwargs.items():
            taker = key if key in self.keywords and key not in (self.var_args, self.var_kwargs) else self.var_kwargs
            if taker is not None:
                _check_value(value, self.hints[taker], key, typed=self.typed[taker], names_path=self.paths[taker])
                if taker in lazy and isinstance(value, collections.abc.Iterator):
                    swapped[key] = _checked_items(value, *lazy[taker], key)
        if not swapped:
            return args, kwargs
        return tuple(swapped.get(i, v) for i, v in enumerate(args)), {k: swapped.get(k, v) for k, v in kwargs.items()}


def _lazy_items(hint: Any) -> Any:
    """The item hint of ``Iterable[X]`` or ``Iterator[X]`` (alone or in a union), else ``None``:
    what an iterator given for it is checked against, item by item."""
    for member in typing.get_args(hint) if typing.get_origin(hint) in _UNIONS else (hint,):
        args = typing.get_args(member)
        if typing.get_origin(member) in (collections.abc.Iterable, collections.abc.Iterator) and len(args) == 1:
            return None if args[0] in (Any, object) else args[0]
    return None


def _checked_items(
    items: collections.abc.Iterator[Any], hint: Any, names_path: tuple[bool, bool], path: str
) -> collections.abc.Iterator[Any]:
    """``items``, each checked as the callee reads it: at ``path[i]``, by the rules of an argument."""
    for i, item in enumerate(items):
        _check_value(item, hint, f"{path}[{i}]", names_path=names_path)
        yield item


def _check_value(value: Any, hint: Any, path: str, *, typed: bool = True, names_path: tuple[bool, bool] = (False, False)) -> None:
    """The checks of one argument (docs/internals.md); ``hint`` ``None``: nothing to check
    its type against; ``typed=False``: the callable checks the type itself (``checked(own=...)``);
    ``names_path``: the hint says a path, and says a collection of paths (:func:`_names_path`,
    :func:`_items_name_paths`)."""
    if hint is not None:
        problem = _problem(value, hint, path) if typed else None
        if problem is not None:
            where, wanted, got = problem
            # A value of a type the hint takes, but not one of its values ('c' for Literal['a', 'b']),
            # breaks a rule, as Python's own ValueError for a choice; anything else is a wrong type.
            error = ConfigError if _one_of_its_values_has_the_type(wanted, got) else ArgumentTypeError
            raise error(f"must be {_describe(wanted)} (got {shown(got)})", path=where)
        if names_path[0] and isinstance(value, (str, os.PathLike)):
            check_path(value, what=path)
        elif names_path[1] and isinstance(value, (list, tuple, set, frozenset)):
            for i, item in enumerate(value):
                if isinstance(item, (str, os.PathLike)):
                    check_path(item, what=f"{path}[{i}]")
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


_NAME_MAX = 255
"""The longest name (one part of a path) in bytes: the limit of ext4, XFS, Btrfs, tmpfs and APFS."""
_PATH_MAX = 4095
"""The longest path in bytes a Linux system call takes (4,096 with the NUL that ends it)."""


def check_path(path: str | os.PathLike[str], *, what: str) -> str:
    """``path`` as text, if it can name a file; else a :class:`~profwin.ConfigError` at ``what``:
    a value that is not text or ``os.PathLike`` text, a NUL byte (no file name holds one, and the
    system call refuses it with a ``ValueError``), text the file system cannot encode (a lone
    surrogate such as ``"\\ud800"``: ``UnicodeEncodeError``), or a name in it longer than
    255 bytes or a whole longer than 4,095 (the system call's ``OSError: File name too long``)."""
    try:
        text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    except Exception:  # an __fspath__ that fails, or returns neither str nor bytes
        text = None
    if not isinstance(text, str) or "\0" in text:
        raise ConfigError(f"must be a path: text without NUL bytes (got {shown(path)})", path=what)
    try:
        encoded = os.fsencode(text)
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"cannot be a file name: {exc.reason} at character {exc.start} (got {shown(text)})", path=what
        ) from None
    longest = max(len(name) for name in encoded.split(os.sep.encode()))
    if longest > _NAME_MAX or len(encoded) > _PATH_MAX:
        why = (
            f"a name in it is {longest:,} bytes, over the {_NAME_MAX} a file system allows"
            if longest > _NAME_MAX
            else f"it is {len(encoded):,} bytes, over the {_PATH_MAX:,} a system call takes"
        )
        raise ConfigError(f"cannot be a file name: {why} (got {shown(text)})", path=what)
    return text


# -- resolving annotations ---------------------------------------------------------------------


def _resolve(annotation: Any, namespace: dict[str, Any], where: str, *, own: bool = False) -> Any:
    """The annotation as an object; ``None`` when it says nothing (none, ``Any``, ``object``).
    Text (``from __future__ import annotations``) is evaluated in ``namespace``, as
    :func:`typing.get_type_hints` does; a name found nowhere there stands for a module imported
    for type checkers only (a class of :class:`_DottedMeta`), and must be followed by the rest of
    its dotted path. Anything unresolvable is a ``TypeError`` naming ``where``, but for a parameter the
    callable checks itself (``own``), which only the path rule reads."""
    if annotation is inspect.Parameter.empty:
        return None
    try:
        hint = eval(annotation, namespace, _DottedNames(namespace)) if isinstance(annotation, str) else annotation
        bare = [found.path for found in _dotted_in(hint) if "." not in found.path]
        if bare:
            raise NameError(f"name {bare[0]!r} is not defined; import it, or write it as module.{bare[0]}")
        unsupported = _unsupported(hint)
        if unsupported is not None:
            raise TypeError(f"{unsupported!r} has no run-time test here")
    except Exception as exc:
        if own:
            return None
        raise TypeError(f"profwin cannot check {where}: its annotation {annotation!r} fails ({exc})") from None
    return None if hint in (Any, object) else hint


class _DottedNames(dict[str, Any]):
    """The names an annotation uses that its module does not define: each stands for a module
    imported for type checkers only (a class of :class:`_DottedMeta` for its path)."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        super().__init__()
        self.namespace = namespace

    def __missing__(self, name: str) -> Any:
        if name in self.namespace or hasattr(builtins, name):
            raise KeyError(name)  # the module's own, or a built-in: found where eval looks next
        return _dotted(name)


class _DottedMeta(type):
    """``profwin.engine.Backend`` in an annotation, where ``profwin.engine`` is imported for type
    checkers only: each attribute is the path one name longer. A class, so that ``str | X``,
    ``X | None`` and ``Sequence[X]`` are written as for any class."""

    path: str

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):  # typing's and pickle's questions (__origin__, __args__, ...)
            raise AttributeError(name)
        return _dotted(f"{cls.path}.{name}")


@functools.cache
def _dotted(path: str) -> type:
    return _DottedMeta(path.rpartition(".")[2], (), {"path": path})


def _dotted_in(hint: Any) -> list[Any]:
    """Every dotted name (a class of :class:`_DottedMeta`) in ``hint``, its arguments included."""
    if isinstance(hint, _DottedMeta):
        return [hint]
    return [found for arg in typing.get_args(hint) for found in _dotted_in(arg)]


def _unsupported(hint: Any) -> Any:
    """The first part of ``hint`` :func:`_problem` has no run-time test for, or ``None``."""
    if hint is None or hint is Ellipsis or isinstance(hint, (_DottedMeta, TypeVar, typing.NewType)) or hint in (Any, object):
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is None:
        return None if inspect.isclass(hint) else hint
    if origin is typing.Literal or origin is collections.abc.Callable:
        return None  # the values are the hint; a callable's parameters are not checked
    if origin is typing.Annotated:
        return _unsupported(args[0])
    if origin not in _UNIONS and origin is not type and not inspect.isclass(origin):
        return hint
    return next((found for arg in args if arg != () and (found := _unsupported(arg)) is not None), None)


@functools.cache
def _imported(path: str) -> Any:
    """The object at the dotted ``path``: its longest importable module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module != exc.name and not module.startswith(f"{exc.name}."):
                raise  # the module exists and failed to import something of its own
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(f"no module for the annotation {path!r}", name=parts[0])


# -- what an annotation takes ------------------------------------------------------------------


def _problem(value: Any, hint: Any, path: str) -> tuple[str, Any, Any] | None:
    """Where ``value`` breaks ``hint``: (path, the hint there, the value there); ``None`` if it does not."""
    # type(hint), not hint.__class__: Python 3.10 forwards a generic alias's __class__ to its
    # origin (tuple[int, str].__class__ is type there).
    if type(hint) is type:  # a plain class, the common hint: no typing introspection
        return None if _is_instance(value, hint) else (path, hint, value)
    if isinstance(hint, _DottedMeta):
        return _problem(value, _imported(hint.path), path)
    origin, args = _shape(hint)
    if hint is None or hint is type(None):
        return None if value is None else (path, None, value)
    if isinstance(hint, TypeVar) or hint in (Any, object):
        return None
    if origin in _UNIONS:
        return None if any(_problem(value, member, path) is None for member in args) else (path, hint, value)
    if origin is typing.Literal:
        # The type first: a value's own == may answer with no bool at all (an array's).
        return None if any(type(value) is type(a) and value == a for a in args) else (path, hint, value)
    if origin is typing.Annotated:
        return _problem(value, args[0], path)
    if isinstance(hint, typing.NewType):
        return _problem(value, hint.__supertype__, path)
    if origin is type:
        wanted = args[0] if args else object
        fits = inspect.isclass(value) and (not inspect.isclass(wanted) or issubclass(value, wanted))
        return None if fits else (path, hint, value)
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        return None if callable(value) else (path, hint, value)
    if origin is not None:
        return _container_problem(value, hint, origin, args, path)
    return None if _is_instance(value, hint) else (path, hint, value)


def _shape(hint: Any) -> tuple[Any, tuple[Any, ...]]:
    """``typing.get_origin(hint), typing.get_args(hint)``, asked once per hint."""
    try:
        return _shapes[hint]
    except KeyError:
        shape = _shapes[hint] = (typing.get_origin(hint), typing.get_args(hint))
        return shape
    except TypeError:  # an unhashable hint (a Literal of a list)
        return typing.get_origin(hint), typing.get_args(hint)


_shapes: dict[Any, tuple[Any, tuple[Any, ...]]] = {}


def _is_instance(value: Any, cls: type) -> bool:
    if getattr(cls, "_is_protocol", False):
        # Duck types: a fake or a partial implementation that works must keep working, so only
        # what cannot implement the protocol at all is refused: plain data, paths, classes and
        # modules (a path's ``name``, a class's methods, are no backend's: an implementation is an
        # object), and a value with none of its members (a function given for a backend).
        if isinstance(value, (*_PLAIN_DATA, PurePath, type, types.ModuleType)):
            return False
        members = _protocol_members(cls)
        return not members or any(hasattr(value, name) for name in members)
    if cls is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if cls is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, cls)


@functools.cache
def _protocol_members(cls: type) -> tuple[str, ...]:
    """The attributes and methods a protocol declares (``typing`` keeps them privately)."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base in (object, typing.Protocol, typing.Generic) or not getattr(base, "_is_protocol", False):
            continue
        names.update(getattr(base, "__annotations__", {}))
        names.update(name for name in vars(base) if not name.startswith("_") or name == "__call__")
    return tuple(sorted(names))


def _container_problem(value: Any, hint: Any, origin: type, args: tuple[Any, ...], path: str) -> tuple[str, Any, Any] | None:
    any_length = origin is tuple and len(args) == 2 and args[1] is Ellipsis
    if not (_is_instance(value, origin) or (any_length and isinstance(value, list))):
        return (path, hint, value)  # a list is taken for a tuple[X, ...]: both are "some Xs" to a caller
    if isinstance(value, _TEXT) and origin not in _TEXT:
        return (path, hint, value)  # text is a sequence of characters, never what a Sequence[str] means
    if not args:
        return None
    if not isinstance(value, _CONTAINERS):
        if isinstance(value, collections.abc.Iterator) or not isinstance(value, collections.abc.Collection):
            return None  # reading would consume it: an iterator is checked as the callee reads it (_checked_items)
        try:
            value = _items_of(value)
        except Exception:  # it cannot be read (a released memoryview, a config value that does not resolve)
            return (path, hint, value)
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
            return (path, hint, value)
        pairs = list(zip(value, args, strict=True))
    else:
        pairs = [(item, args[0]) for item in value]
    for i, (item, item_hint) in enumerate(pairs):
        problem = _problem(item, item_hint, f"{path}[{i}]")
        if problem is not None:
            return problem
    return None


_MAX_LOOK = 1 << 16
"""The most items of a collection other than a built-in container that the check reads."""


def _items_of(value: collections.abc.Collection[Any]) -> list[Any] | dict[Any, Any]:
    """The first :data:`_MAX_LOOK` items of a collection that is not a built-in container (a
    range, a memoryview, an array, a config's list), read without consuming it, as a list (a
    mapping's as a dict) to look into."""
    if isinstance(value, collections.abc.Mapping):
        return dict(itertools.islice(value.items(), _MAX_LOOK))
    return list(itertools.islice(value, _MAX_LOOK))


def _one_of_its_values_has_the_type(hint: Any, value: Any) -> bool:
    """Whether ``hint`` (or a member of it) is a ``Literal`` with a value of ``value``'s type."""
    members = typing.get_args(hint) if typing.get_origin(hint) in _UNIONS else (hint,)
    return any(
        typing.get_origin(m) is typing.Literal and any(type(a) is type(value) for a in typing.get_args(m)) for m in members
    )


def _path_flags(hint: Any) -> tuple[bool, bool]:
    """Whether ``hint`` says a path, and says a collection of paths (``names_path`` of
    :func:`_check_value`)."""
    return _names_path(hint), _items_name_paths(hint)


def _names_path(hint: Any) -> bool:
    """Whether ``hint`` says a path: ``os.PathLike``, ``Path`` or a union holding one."""
    if typing.get_origin(hint) in _UNIONS:
        return any(_names_path(member) for member in typing.get_args(hint))
    cls = typing.get_origin(hint) or hint
    return inspect.isclass(cls) and not isinstance(cls, _DottedMeta) and issubclass(cls, (os.PathLike, PurePath))


def _items_name_paths(hint: Any) -> bool:
    """Whether ``hint`` says a collection of paths: ``Iterable[str | Path]``, or a union holding one."""
    origin = typing.get_origin(hint)
    if origin in _UNIONS:
        return any(_items_name_paths(member) for member in typing.get_args(hint))
    args = typing.get_args(hint)
    return (
        inspect.isclass(origin)
        and issubclass(origin, collections.abc.Iterable)
        and not issubclass(origin, (collections.abc.Mapping, str))
        and len(args) in (1, 2)
        and _names_path(args[0])
    )


def _describe(hint: Any) -> str:
    """An annotation as a reader writes it: ``str | os.PathLike[str] | None``, ``Mapping[str, Any]``."""
    if hint is None or hint is type(None):
        return "None"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in _UNIONS:
        return " | ".join(_describe(member) for member in args)
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        return "callable"
    if isinstance(hint, _DottedMeta):
        return hint.__name__
    if origin is not None and args:
        name = "os.PathLike" if origin is os.PathLike else getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join('...' if a is Ellipsis else _describe(a) for a in args)}]"
    if inspect.isclass(hint):
        return hint.__name__
    return str(hint).replace("typing.", "")


_OWN_MODULE = re.compile(r"profwin(?:$|[._])")
"""The modules of profwin and its plugins: ``profwin``, ``profwin.*`` and ``profwin_*``."""


@checked
def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` at the first frame outside profwin and its plugins:
    the line of the user's code that led to it, however many of profwin's frames lie between
    (argument checks, engine flavours, hooks, the trainer integrations' guards). What Python
    3.12's ``skip_file_prefixes`` does, on every Python profwin supports. The way profwin and its
    plugins warn."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and _OWN_MODULE.match(frame.f_globals.get("__name__") or ""):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level + 1)
