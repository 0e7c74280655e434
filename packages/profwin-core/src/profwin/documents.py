"""Reading a whole configuration document and picking a subtree of it, as plain data.

Every spec loader reads its input here: :func:`read_document` reads a YAML/JSON file or takes an
object as it is, :func:`plain` turns dataclasses (verl's configs) and OmegaConf nodes into dicts
and lists, and :func:`select` picks the subtree at a dotted path with its ``${...}``
interpolations resolved. Nothing here knows what a profile spec is, so :mod:`profwin.config`
(profwin's own specs) and a spec-format plugin (profwin-verl) read documents the same way.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from profwin.arguments import checked
from profwin.errors import ConfigError, shown
from profwin.inputs import read_spec_file

__all__ = ["MAX_EXPANDED_CHARS", "join_path", "plain", "read_document", "select"]

_OMEGACONF_HINT = "pip install omegaconf (profwin-verl installs it)"


def join_path(path: str, key: str) -> str:
    """``path.key`` (``key`` alone at the root): the dotted paths errors name."""
    return f"{path}.{key}" if path else key


@checked
def read_document(source: Any) -> tuple[Any, Path | None]:
    """A whole document and the folder relative paths in it start from (``None``: the working
    directory): a file path is read and parsed, an OmegaConf config is kept (its interpolations
    resolve against its root), and anything else goes through :func:`plain`. A document with
    interpolations comes back as one OmegaConf config (when OmegaConf is installed), so each
    :func:`select` in it resolves only the subtree it returns."""
    if isinstance(source, (str, os.PathLike)):
        data, file = read_spec_file(source)
        return _resolvable(data), file.parent
    if _is_omegaconf(source):
        return source, None
    return _resolvable(plain(source)), None


@checked
def plain(data: Any, *, path: str = "") -> Any:
    """verl's dataclasses, OmegaConf nodes, mappings and sequences as plain dicts and lists, at any depth.

    Dataclasses are read field by field: verl's ``BaseConfig`` is a ``Mapping`` whose ``in``
    raises ``AttributeError`` for a missing key, so the Mapping protocol is never used on it.
    OmegaConf nodes are converted with their interpolations resolved.
    """
    return _plain(data, path)


def _plain(data: Any, path: str) -> Any:
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return {f.name: _plain(getattr(data, f.name), join_path(path, f.name)) for f in dataclasses.fields(data)}
    if _is_omegaconf(data):
        return _plain(_to_container(data, path), path)
    if isinstance(data, Mapping):
        return {key: _plain(value, join_path(path, str(key))) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_plain(value, f"{path}[{i}]") for i, value in enumerate(data)]
    return data


@checked
def select(document: Any, at: str | None) -> Any:
    """The subtree of ``document`` at the dotted path ``at`` (all of it when ``None``), as plain
    data, with its ``${...}`` interpolations (``${oc.select:...}`` included) resolved against the
    whole document through OmegaConf (``pip install omegaconf``)."""
    try:
        return _select(document, at)
    except ConfigError as exc:
        defaults = document.get("defaults") if isinstance(document, Mapping) else None
        if "Interpolation key" not in exc.reason or isinstance(defaults, str) or not isinstance(defaults, Sequence):
            raise
        raise ConfigError(exc.reason + _HYDRA_HINT, path=exc.path) from None


_HYDRA_HINT = (
    "; the file's defaults list (Hydra) composes it with files profwin does not read: set the value in this file, "
    "or read the config your Hydra app composes (run it with --cfg job --resolve, which prints it and exits)"
)


def _resolvable(document: Any) -> Any:
    """``document``, as an OmegaConf config when it holds interpolations that OmegaConf (when
    installed) can resolve, bounded first by :func:`_check_expansion`."""
    omegaconf = _omegaconf()
    if omegaconf is not None and not _is_omegaconf(document) and _interpolation(document):
        _check_expansion(document)
        return _omegaconf_call(lambda: omegaconf.OmegaConf.create(document), "")
    return document


def _select(document: Any, at: str | None) -> Any:
    node, walked = _resolvable(document), ""
    for key in at.split(".") if at else ():
        if not isinstance(node, Mapping):
            raise ConfigError(f"no key {shown(key)} under {walked} (it is a {type(node).__name__})", path="at")
        keys = [str(k) for k in node]
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"keys: {', '.join(keys[:12])}{', ...' if len(keys) > 12 else ''}"
            raise ConfigError(f"no key {shown(key)} under {walked or 'the document root'} ({hint})", path="at")
        walked = join_path(walked, key)
        node = _child(node, key, walked)
    data = plain(node, path=walked)
    interpolation = _interpolation(data)
    if interpolation is not None:
        where, text = interpolation
        raise ConfigError(
            f"holds the interpolation {text!r}, which needs OmegaConf to resolve: {_OMEGACONF_HINT}",
            path=join_path(walked, where),
        )
    return data


MAX_EXPANDED_CHARS = 1 << 20
"""Longest string a ``${...}`` interpolation may expand to (1 MiB): a file of a few hundred
bytes whose strings each repeat the previous one ten times would otherwise resolve to gigabytes."""
_REFERENCE = re.compile(r"\$\{([^${}]*)\}")


def _check_expansion(document: Any) -> None:
    """Refuse, before OmegaConf resolves anything, a string whose interpolations expand past
    :data:`MAX_EXPANDED_CHARS`. Lengths are computed from the text, each referenced value
    measured once (references to absolute dotted paths, plain or through ``oc.select``)."""
    sizes: dict[str, int] = {}

    def lookup(dotted: str) -> Any:
        node = document
        for key in dotted.split("."):
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                return None
        return node

    def size(value: Any, dotted: str, visiting: frozenset[str]) -> int:
        if not isinstance(value, str):
            return len(str(value)) if not isinstance(value, (Mapping, list)) else 0
        if dotted in sizes:
            return sizes[dotted]
        total = len(value)
        for match in _REFERENCE.finditer(value):
            ref = match.group(1).strip().removeprefix("oc.select:").split(",")[0].strip()
            if ref and not ref.startswith(".") and ref not in visiting:
                total += size(lookup(ref), ref, visiting | {ref})
            if total > MAX_EXPANDED_CHARS:
                raise ConfigError(
                    f"expands past {MAX_EXPANDED_CHARS:,} characters once its ${{...}} interpolations are resolved, "
                    "the limit for one value",
                    path=dotted,
                )
        if dotted:
            sizes[dotted] = total
        return total

    def walk(value: Any, dotted: str) -> None:
        if isinstance(value, Mapping):
            for key, child in value.items():
                walk(child, join_path(dotted, str(key)))
        elif isinstance(value, list):
            for i, child in enumerate(value):
                walk(child, join_path(dotted, str(i)))
        else:
            size(value, dotted, frozenset({dotted}))

    walk(document, "")


def _child(node: Mapping[Any, Any], key: str, path: str) -> Any:
    if _is_omegaconf(node):
        return _omegaconf_call(lambda: node[key], path)  # resolves an interpolated child
    return node[key]


def _interpolation(data: Any, path: str = "") -> tuple[str, str] | None:
    """The first ``${...}`` string in plain data, with its path."""
    if isinstance(data, str):
        return (path, data) if "${" in data else None
    items = data.items() if isinstance(data, Mapping) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = _interpolation(value, f"{path}[{key}]" if isinstance(key, int) else join_path(path, str(key)))
        if found is not None:
            return found
    return None


def _omegaconf() -> Any:
    try:
        import omegaconf
    except ImportError:
        return None
    return omegaconf


def _is_omegaconf(data: Any) -> bool:
    return type(data).__module__.startswith("omegaconf")


def _to_container(node: Any, path: str) -> Any:
    from omegaconf import OmegaConf  # only reachable with an OmegaConf node in hand

    return _omegaconf_call(lambda: OmegaConf.to_container(node, resolve=True), path)


def _omegaconf_call(call: Callable[[], Any], path: str) -> Any:
    from omegaconf.errors import OmegaConfBaseException

    try:
        return call()
    except OmegaConfBaseException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        where = exc.full_key if isinstance(exc.full_key, str) and exc.full_key.startswith(path) else path
        raise ConfigError(f"OmegaConf cannot read it: {reason}", path=where) from None
