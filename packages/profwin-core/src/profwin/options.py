"""Plugin options: ``spec.options[name]`` read into an attrs class the plugin declares.

How it works, and why: docs/internals.md, ``profwin.options``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from profwin.arguments import checked
from profwin.errors import ConfigError, shown, unknown_key
from profwin.spec import ProfileSpec

__all__ = ["at_least", "choice", "flag", "names", "parse_options"]

T = TypeVar("T")
Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


@checked
def parse_options(cls: type[T], source: ProfileSpec | Mapping[str, Any], plugin: str) -> T:
    """``cls(**options)`` for ``source`` (a spec, or its ``options[plugin]`` mapping), with every
    error located under ``options.<plugin>``."""
    raw = source.plugin_options(plugin) if isinstance(source, ProfileSpec) else source
    where = f"options.{plugin}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"must be a mapping of options (got {shown(raw)})", path=where)
    valid = tuple(a.name for a in attrs.fields(cls))  # type: ignore[arg-type]
    errors = [unknown_key(key, valid, path=where) for key in raw if key not in valid]
    if errors:
        raise ConfigError.combine(errors)
    try:
        return cls(**dict(raw))
    except ConfigError as exc:
        raise exc.at(where) from None


@checked
def flag(_: object, attribute: attrs.Attribute, value: object) -> None:  # type: ignore[type-arg]  # Attribute[Any] fails at run time
    """Validator: a bool (``1`` or ``"yes"`` are refused: YAML typos should not turn things on)."""
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false (got {shown(value)})", path=attribute.name)


@checked
def at_least(minimum: int) -> Validator:
    """Validator: an int ``>= minimum`` (``True`` and ``1.5`` are refused)."""

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"must be an int >= {minimum} (got {shown(value)})", path=attribute.name)

    return check


@checked
def choice(*values: object) -> Validator:
    """Validator: one of ``values``."""

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        # The type first: a value's own == may answer with no bool at all (an array's).
        if not any(isinstance(value, type(v)) and value == v for v in values):
            raise ConfigError(f"must be one of {list(values)} (got {shown(value)})", path=attribute.name)

    return check


@checked
def names(*allowed: str, optional: bool = True) -> Validator:
    """Validator: a non-empty list drawn from ``allowed`` (``None`` passes when ``optional``)."""

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None and optional:
            return
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
            raise ConfigError(f"must be a non-empty list drawn from {list(allowed)} (got {shown(value)})", path=attribute.name)
        for i, item in enumerate(value):
            if item not in allowed:
                raise ConfigError(f"must be one of {list(allowed)} (got {shown(item)})", path=f"{attribute.name}[{i}]")

    return check
