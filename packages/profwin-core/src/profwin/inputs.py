"""Reading files within stated bounds, so a small hostile file cannot take a process down.

How it works, and why: docs/internals.md, ``profwin.inputs``.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import select
import stat
import sys
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import urlsplit

from profwin.arguments import MAX_DEPTH, check_nesting, check_path, checked
from profwin.errors import ConfigError, UnreadableInput, shown

__all__ = [
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_SPEC_BYTES",
    "MAX_TIMEOUT",
    "MAX_URL_CHARS",
    "check_timeout",
    "expand_user",
    "normalize_url",
    "open_input",
    "parse_json",
    "parse_spec_text",
    "read_input",
    "read_spec_file",
]

MAX_SPEC_BYTES = 1 << 20
"""Largest spec file read (1 MiB)."""
MAX_NODES = 100_000
"""Most values (mappings, lists and scalars) in a spec document, YAML aliases expanded."""
MAX_ALIASES = 1_000
"""Most YAML aliases (``*name``) in a spec document."""
MAX_TIMEOUT = 86_400.0
"""Longest deadline profwin takes for one exchange with an engine, in seconds (a day): longer is
a typo, and past about 9e9 s the system's timers overflow."""


def check_timeout(timeout: object) -> float:
    """``timeout`` as seconds: a finite number greater than 0 and at most :data:`MAX_TIMEOUT`
    (a bool is not a number here). The one check for every deadline profwin is given; it lives
    here, not with the HTTP client that uses it, so a caller can check a deadline without
    importing ``http.client``, ``ssl`` and ``socket`` (:class:`profwin.RolloutProfiler`)."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not (0 < timeout <= MAX_TIMEOUT)  # False for NaN too
    ):
        raise ConfigError(
            f"must be a number of seconds greater than 0 and at most {MAX_TIMEOUT:,.0f} (a day) (got {shown(timeout)})",
            path="timeout",
        )
    return float(timeout)


MAX_URL_CHARS = 2048
"""Longest server URL accepted (browsers and servers stop near there too)."""


@checked
def normalize_url(url: str) -> str:
    """Check a server URL and return it without a trailing ``/``, with ``http://`` if no scheme.

    ``"127.0.0.1:8000/"`` gives ``"http://127.0.0.1:8000"``; a path prefix is kept
    (``"http://h:8000/sglang/"`` gives ``"http://h:8000/sglang"``). Raises
    :class:`~profwin.ConfigError` (path ``url``) for another scheme, no host, credentials
    (without repeating them), a query or fragment, a bad port, spaces or control characters.
    """
    if not isinstance(url, str):
        raise ConfigError(f"must be a URL string (got {shown(url)})", path="url")
    text = url.strip()
    if len(text) > MAX_URL_CHARS:
        raise ConfigError(f"must be at most {MAX_URL_CHARS:,} characters (got {shown(text)})", path="url")
    full = text if "://" in text else f"http://{text}"
    if "@" in full:
        # Only a well-formed host[:port] after the last "@" is repeated: in a malformed URL
        # ("h:9@admin:secret") any part may be the password.
        host = re.match(r"[A-Za-z0-9.\-]+(:[0-9]{1,5})?(?=/|$)", full.rpartition("@")[2])
        masked = f"{full.partition('://')[0]}://***@{host.group(0) if host else '***'}"
        raise ConfigError(
            f"must not contain credentials (got {masked!r}); pass the API key with --api-key, $PROFWIN_API_KEY or api_key=",
            path="url",
        )
    if not full.isascii() or not full.isprintable() or re.search(r"\s", full):
        raise ConfigError(f"must be ASCII without spaces or control characters (got {shown(text)})", path="url")
    try:
        parts = urlsplit(full)
    except ValueError as exc:
        raise ConfigError(f"is not a valid URL: {exc} (got {shown(text)})", path="url") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ConfigError(f"must start with http:// or https:// (got {shown(text)})", path="url")
    if "?" in full or "#" in full:
        raise ConfigError(f"must not have a query or fragment (got {shown(text)})", path="url")
    if not parts.hostname:
        raise ConfigError(f"has no host (got {shown(text)})", path="url")
    _, colon, port = parts.netloc.rpartition("]")[2].partition(":")
    if colon and not (port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        raise ConfigError(f"port must be a number from 1 to 65535 (got {shown(port)} in {shown(text)})", path="url")
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def expand_user(path: str | os.PathLike[str], *, what: str) -> Path:
    """``path`` (checked by :func:`~profwin.arguments.check_path`) with a leading ``~`` or
    ``~user`` expanded; a user with no home directory is a :class:`ConfigError`.
    ``os.path.expanduser`` leaves such a path as it is, so every ``~`` profwin expands goes through
    here. Errors are located at ``what``, the field the caller read ``path`` from (not
    :func:`~profwin.arguments.checked`, which would name this function's own parameter)."""
    if not isinstance(what, str):
        raise ConfigError(f"must be the name of the field the path is read from (got {shown(what)})", path="what")
    text = check_path(path, what=what)
    expanded = os.path.expanduser(text)
    if expanded.startswith("~"):
        user = text.split(os.sep, 1)[0]
        raise ConfigError(f"{shown(text)} starts with {shown(user)}, but there is no such user's home directory", path=what)
    return Path(expanded)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


FIFO_IDLE_S = 30.0
"""How long a FIFO or pipe may stay silent (no writer, or no data) before reading it fails."""


class _Pipe(io.RawIOBase):
    """A FIFO or pipe read without ever blocking for longer than :data:`FIFO_IDLE_S`."""

    def __init__(self, fd: int, name: str, what: str) -> None:
        self._fd = fd
        self._name = name
        self._what = what

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buffer: Any) -> int:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN | select.POLLHUP)
        if not poller.poll(FIFO_IDLE_S * 1000):
            raise ConfigError(
                f"cannot read {self._what} {self._name!r}: it is a FIFO or pipe and nothing was written to it "
                f"for {FIFO_IDLE_S:g} s (is a writer running?)"
            )
        try:
            data = os.read(self._fd, len(buffer))
        except BlockingIOError:
            return self.readinto(buffer)
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


@checked
def open_input(path: str | os.PathLike[str], *, what: str, pipes: bool = True) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file, a FIFO or a pipe (a
    symbolic link to one is fine); else a :class:`ConfigError` naming ``what``, the file and
    what it is (a directory, a device such as ``/dev/zero``, a socket). ``pipes=False``: a
    regular file only (a file profwin wrote itself, such as a state file: a FIFO there is
    refused at once instead of waited on).

    The file is opened with ``O_NONBLOCK`` and its type checked before any read: a plain
    ``open()`` of a FIFO waits for ever for a writer, and a device never ends. A FIFO or pipe
    (``--spec <(...)``) is then read without blocking for more than :data:`FIFO_IDLE_S` at a time.
    A missing file is :class:`FileNotFoundError` (callers say "no such file" their own way).
    """
    file = os.fspath(path)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnreadableInput(f"cannot read {what} {str(file)!r}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) and pipes:
            return cast(BinaryIO, io.BufferedReader(_Pipe(fd, str(file), what)))
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file")
            allowed = "regular files, FIFOs and pipes" if pipes else f"a {what} only as a regular file"
            raise UnreadableInput(f"cannot read {what} {str(file)!r}: it is {kind}; profwin reads {allowed}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@checked
def read_input(path: str | os.PathLike[str], *, limit: int, what: str, pipes: bool = True) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_input`, and ``pipes`` there), at
    most ``limit`` of them: a larger file is a :class:`ConfigError` stating the limit (only
    ``limit + 1`` bytes are read, so a sparse file of gigabytes costs nothing)."""
    chunks: list[bytes] = []
    size = 0
    with open_input(path, what=what, pipes=pipes) as f:
        try:
            # In chunks: one read(limit + 1) would allocate the whole limit up front.
            while size <= limit and (chunk := f.read(min(1 << 20, limit + 1 - size))):
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:
            raise UnreadableInput(f"cannot read {what} {os.fspath(path)!r}: {exc.strerror or exc}") from None
    data = b"".join(chunks)
    if len(data) > limit:
        raise ConfigError(f"{what} {os.fspath(path)!r} is larger than {limit:,} bytes, the limit for it")
    return data


def read_spec_file(path: str | os.PathLike[str]) -> tuple[Any, Path]:
    """The parsed document in the spec file ``path`` and the file's path, ``~`` expanded."""
    file = expand_user(path, what="spec file")
    try:
        data = read_input(file, limit=MAX_SPEC_BYTES, what="spec file")
    except FileNotFoundError as exc:
        raise UnreadableInput(f"cannot read spec file {str(file)!r}: {exc.strerror}") from None
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


def bounded_int(text: str) -> int:
    """``int(text)`` for a JSON or YAML integer, refusing more digits than Python converts
    (``sys.get_int_max_str_digits()``, 4,300 by default) with a ``ValueError`` that says so."""
    _check_digits(text)
    return int(text)


def _check_digits(text: str) -> None:
    """Refuse, with a ``ValueError`` that says so, an integer written with more digits than
    Python converts (``sys.get_int_max_str_digits()``); ``text`` itself is not converted, so
    YAML's other spellings (``0x1F``, ``20:40``) pass through to their own readers."""
    digits = len(text.lstrip("+-").lstrip("0_"))
    limit = sys.get_int_max_str_digits()
    if limit and digits > limit:
        raise ValueError(f"an integer of {digits:,} digits; the limit is {limit:,} digits")


@checked
def parse_json(text: str | bytes, *, source: str) -> Any:
    """JSON ``text`` (bytes: UTF-8) within the spec bounds (:data:`MAX_DEPTH` levels,
    :data:`MAX_NODES` values, no duplicate keys, no ``NaN``, integers within Python's digit limit):
    the one parser for the JSON files profwin reads back (state files, sidecars, manifests). Anything
    else is a :class:`ConfigError` naming ``source``, never a ``RecursionError``."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{source}: is not UTF-8 text (byte {text[exc.start : exc.start + 1]!r} at offset {exc.start})"
            ) from None
    return _parse_json(text, source)


def _parse_json(text: str, source: str) -> Any:
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_int=bounded_int)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source} is not valid JSON: {exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"nested deeper than {MAX_DEPTH} levels, the limit for profwin's inputs", path=source) from None
    check_nesting(data, source, max_nodes=MAX_NODES)
    return data


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

        def _check_expanded(self, node: Node, seen: dict[int, tuple[int, int] | None]) -> tuple[int, int]:
            # (values, depth) of ``node`` with aliases expanded. An alias is the anchored node
            # object itself, already measured (anchors come first in document order): memoising
            # by identity makes this linear in the file, however large the expansion. A node met
            # again while it is being measured holds itself (``a: &a [*a]``): it expands forever.
            if id(node) in seen:
                measured = seen[id(node)]
                if measured is None:
                    raise self._fail(node, "holds itself through an alias, so it would expand without end")
                return measured
            seen[id(node)] = None
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

        def construct_yaml_int(self, node: Any) -> int:
            try:
                _check_digits(str(node.value).replace("_", ""))
            except ValueError as exc:
                raise self._fail(node, str(exc)) from None
            value: int = super().construct_yaml_int(node)  # type: ignore[no-untyped-call]
            return value

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
            number = (
                self.construct_yaml_int(node) if node.tag.endswith(":int") else yaml.SafeLoader.construct_yaml_float(self, node)
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
