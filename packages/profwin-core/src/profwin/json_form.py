"""The JSON form of profwin's attrs models, written once for all of them.

How it works, and why: docs/internals.md, ``profwin.json_form``.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import attrs

from profwin.arguments import checked
from profwin.errors import ConfigError, shown
from profwin.selection import Rollouts
from profwin.window import Window

__all__ = ["JsonForm", "from_json", "json_ready", "to_json"]

_M = TypeVar("_M")


@checked
def json_ready(value: Any) -> Any:
    """A JSON-ready copy of plain data: mappings (read-only views included) as dicts with string
    keys, tuples and lists as lists, windows and paths as their text."""
    return _ready(value)


def _ready(value: Any) -> Any:
    if isinstance(value, (Window, Rollouts, Path)):  # before the attrs check: attrs classes written as text
        return str(value)
    if attrs.has(type(value)):
        return to_json(value)
    if isinstance(value, Mapping):
        return {str(k): _ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_ready(v) for v in value]
    return value


@checked
def to_json(model: Any, *, only: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> dict[str, Any]:
    """``model`` (an attrs instance) as JSON-ready data, field by field in declaration order.

    ``only`` keeps just those fields, ``exclude`` drops some (fields that are not part of the
    form, e.g. a compiled regex, are declared ``eq=False, repr=False`` and dropped by name)."""
    if not attrs.has(type(model)):
        raise ConfigError(f"must be an attrs instance, a model (got {shown(model)})", path="model")
    keep = None if only is None else frozenset(only)
    drop = frozenset(exclude)

    def wanted(attribute: attrs.Attribute[Any], _: Any) -> bool:
        return attribute.name not in drop and (keep is None or attribute.name in keep)

    # recurse=False: nested models go through json_ready (and to_json) whole, without this filter.
    return attrs.asdict(model, recurse=False, filter=wanted, value_serializer=lambda _, __, value: _ready(value))


def from_json(cls: type[_M], data: Mapping[str, Any], *, path: str = "") -> _M:
    """The model :func:`to_json` wrote: each field read back by its annotation; bad data is a
    :class:`~profwin.ConfigError` located at ``path``."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"must be a mapping (got {type(data).__name__})", path=path)
    hints = _hints(cast(Any, cls))
    kwargs: dict[str, Any] = {}
    try:
        for attribute in attrs.fields(cls):  # type: ignore[arg-type,misc]
            if not attribute.init:
                continue
            if attribute.name not in data:
                if attribute.default is attrs.NOTHING:
                    raise KeyError(attribute.name)
                continue
            kwargs[attribute.name] = _read(hints[attribute.name], data[attribute.name])
        return cls(**kwargs)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"is not {cls.__name__} data written by profwin ({type(exc).__name__}: {exc})", path=path) from None


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    """The class's resolved annotations (evaluating them is most of the cost of reading a model)."""
    return typing.get_type_hints(cls)


def _read(hint: Any, value: Any) -> Any:
    """``value`` read as the annotated type (only what :func:`json_ready` changed is undone)."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return _read(options[0], value) if len(options) == 1 else value
    readers: dict[Any, Callable[[Any], Any]] = {Window: Window.parse, Rollouts: Rollouts.parse, Path: Path}
    if hint in readers:
        return readers[hint](value)
    if origin is tuple:
        args = typing.get_args(hint)
        item = args[0] if len(args) == 2 and args[1] is Ellipsis else Any
        return tuple(_read(item, v) for v in value)
    if attrs.has(hint):
        return from_json(hint, value)
    return value


class JsonForm:
    """Mixin for an attrs model: ``to_dict()`` and ``from_dict()`` through :func:`to_json` and
    :func:`from_json`, so no model writes its JSON form by hand."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The model as JSON-ready data (what ``--json`` prints)."""
        return to_json(self)

    @classmethod
    def from_dict(cls: type[_M], data: Mapping[str, Any], *, path: str = "") -> _M:
        """The model :meth:`to_dict` wrote; bad data is a :class:`~profwin.ConfigError` at ``path``."""
        return from_json(cls, data, path=path)
