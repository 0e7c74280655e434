"""Reading spec files within stated bounds, so a small hostile file cannot take a process down.

A spec is a few dozen keys. Anything far larger is a mistake or an attack, and fails here with
one line naming the file, where in it, and the bound:

- size: at most :data:`MAX_SPEC_BYTES`; at most that many bytes plus one are read, so
  ``/dev/zero`` or a FIFO that never ends fails at once;
- text: UTF-8 (a UTF-8 byte-order mark is allowed); UTF-16 or binary data is refused;
- nesting: at most :data:`MAX_DEPTH` levels, counted with YAML aliases expanded;
- size of the document with YAML aliases expanded: at most :data:`MAX_NODES` values, and at
  most :data:`MAX_ALIASES` aliases (a "billion laughs" bomb is a few hundred bytes);
- duplicate keys (JSON or YAML) are refused rather than silently keeping the last one, and so
  are JSON's non-standard ``NaN``/``Infinity``.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from profwin.errors import ConfigError, shown

__all__ = ["MAX_ALIASES", "MAX_DEPTH", "MAX_NODES", "MAX_SPEC_BYTES", "expand_user", "parse_spec_text", "read_spec_file"]

MAX_SPEC_BYTES = 1 << 20
"""Largest spec file read (1 MiB)."""
MAX_DEPTH = 100
"""Deepest nesting of mappings and lists in a spec document."""
MAX_NODES = 100_000
"""Most values (mappings, lists and scalars) in a spec document, YAML aliases expanded."""
MAX_ALIASES = 1_000
"""Most YAML aliases (``*name``) in a spec document."""


def expand_user(path: str | os.PathLike[str], *, what: str) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; an unknown user is a :class:`ConfigError`."""
    try:
        return Path(path).expanduser()
    except RuntimeError:  # pathlib's "Could not determine home directory"
        user = str(path).split(os.sep, 1)[0]
        raise ConfigError(
            f"{what} {shown(str(path))} starts with {shown(user)}, but there is no such user's home directory"
        ) from None


def read_spec_file(path: str | os.PathLike[str]) -> tuple[Any, Path]:
    """The parsed document in the spec file ``path`` and the file's path, ``~`` expanded."""
    file = expand_user(path, what="spec file")
    try:
        with open(file, "rb") as f:
            data = f.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read spec file {str(file)!r}: {exc.strerror or exc}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise ConfigError(f"{file}: larger than {MAX_SPEC_BYTES:,} bytes, the limit for a spec file")
    return parse_spec_text(_decode(data, str(file)), source=str(file)), file


def _decode(data: bytes, source: str) -> str:
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ConfigError(f"{source}: is UTF-16 text; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{source}: is not UTF-8 text (byte {data[exc.start : exc.start + 1]!r} at offset {exc.start}); a spec is YAML or JSON text"
        ) from None


def parse_spec_text(text: str, *, source: str) -> Any:
    """Parse YAML (needs PyYAML: ``pip install 'profwin-core[yaml]'``) or JSON text within the bounds above."""
    if len(text) > MAX_SPEC_BYTES:
        raise ConfigError(f"{source}: longer than {MAX_SPEC_BYTES:,} characters, the limit for a spec")
    if text.lstrip().startswith("{"):
        return _parse_json(text, source)
    try:
        import yaml
    except ImportError:
        raise ConfigError(
            f"{source} is YAML, which needs PyYAML: pip install 'profwin-core[yaml]' (JSON files need nothing)"
        ) from None
    try:
        return _bounded_loader()(text, source).get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML: {' '.join(str(exc).split())}") from None


# -- JSON ---------------------------------------------------------------------------------------


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"duplicate key {shown(key)} in one object (each key may appear once)")
        data[key] = value
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (standard JSON has no NaN or Infinity)")


def _parse_json(text: str, source: str) -> Any:
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source} is not valid JSON: {exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: nested deeper than {MAX_DEPTH} levels, the limit for a spec") from None
    _check_shape(data, source)
    return data


def _check_shape(data: Any, source: str) -> None:
    """Depth and size of a parsed JSON document, walked without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    nodes = 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise ConfigError(f"{source}: nested deeper than {MAX_DEPTH} levels, the limit for a spec")
        if nodes > MAX_NODES:
            raise ConfigError(f"{source}: holds more than {MAX_NODES:,} values, the limit for a spec")
        children = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1) for child in children)


# -- YAML ---------------------------------------------------------------------------------------


@cache
def _bounded_loader() -> Any:
    """A ``yaml.SafeLoader`` that enforces the bounds while composing, before building any object."""
    import yaml
    from yaml.events import AliasEvent
    from yaml.nodes import MappingNode, Node, SequenceNode

    class BoundedLoader(yaml.SafeLoader):
        def __init__(self, text: str, source: str) -> None:
            super().__init__(text)
            self.source = self.name = source
            self.depth = 0
            self.aliases = 0

        def _fail(self, node_or_mark: Any, rule: str) -> ConfigError:
            mark = getattr(node_or_mark, "start_mark", node_or_mark)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            return ConfigError(f"{self.source}{where}: {rule}")

        def compose_node(self, parent: Node | None, index: Any) -> Node | None:
            if self.check_event(AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise self._fail(self.peek_event(), f"more than {MAX_ALIASES:,} aliases, the limit for a spec")  # type: ignore[no-untyped-call]
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    raise self._fail(self.peek_event(), f"nested deeper than {MAX_DEPTH} levels, the limit for a spec")  # type: ignore[no-untyped-call]
                node: Node | None = super().compose_node(parent, index)
                return node
            finally:
                self.depth -= 1

        def get_single_node(self) -> Node | None:
            node: Node | None = super().get_single_node()
            if node is not None:
                self._check_expanded(node, {})
            return node

        def _check_expanded(self, node: Node, seen: dict[int, tuple[int, int]]) -> tuple[int, int]:
            # (values, depth) of ``node`` with aliases expanded. An alias is the anchored node
            # object itself, already measured (anchors come first in document order): memoising
            # by identity makes this linear in the file, however large the expansion.
            if id(node) in seen:
                return seen[id(node)]
            children: list[Node] = []
            if isinstance(node, SequenceNode):
                children = node.value
            elif isinstance(node, MappingNode):
                children = [item for pair in node.value for item in pair]
            nodes, depth = 1, 0
            for child in children:
                child_nodes, child_depth = self._check_expanded(child, seen)
                nodes, depth = nodes + child_nodes, max(depth, child_depth)
            depth += 1
            if depth > MAX_DEPTH:
                raise self._fail(node, f"nested deeper than {MAX_DEPTH} levels once aliases are expanded, the limit for a spec")
            if nodes > MAX_NODES:
                raise self._fail(node, f"holds more than {MAX_NODES:,} values once aliases are expanded, the limit for a spec")
            seen[id(node)] = (nodes, depth)
            return nodes, depth

        def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
            keys: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in keys
                except TypeError:
                    duplicate = False  # unhashable: SafeLoader reports it below
                if duplicate:
                    raise self._fail(key_node, f"duplicate key {shown(key)} in one mapping (each key may appear once)")
                if not isinstance(key, (list, dict)):
                    keys.add(key)
            mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
            return mapping

        def construct_sexagesimal(self, node: Any) -> Any:
            # YAML 1.1 (PyYAML) reads an unquoted 20:40 as the base-60 number 1240; no spec
            # value is written that way on purpose, and a window silently becoming 1240 is a trap.
            number = (yaml.SafeLoader.construct_yaml_int if node.tag.endswith(":int") else yaml.SafeLoader.construct_yaml_float)(
                self, node
            )
            if ":" in str(node.value) and node.style is None:
                raise self._fail(
                    node,
                    f"{node.value} is read by YAML as the base-60 number {number}, not as the text {node.value!r}; "
                    f'quote it: "{node.value}" (a window is written window: "20:40")',
                )
            return number

    BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_sexagesimal)
    BoundedLoader.add_constructor("tag:yaml.org,2002:float", BoundedLoader.construct_sexagesimal)
    return BoundedLoader
