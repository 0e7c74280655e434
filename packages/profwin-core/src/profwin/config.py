"""Loading a :class:`~profwin.ProfileSpec` from dicts, YAML/JSON text or files, and verl configs.

Every profwin spec goes through :func:`spec_from_mapping`, and every verl profiler block through
:mod:`profwin.verl.config` (verl's meaning of each switch), so a rule is checked in one place and
each error carries the path of the key that broke it. Documents are read here once for both:
:func:`plain` turns verl's dataclasses and OmegaConf nodes into dicts and lists, :func:`select`
picks a subtree and resolves its ``${...}`` interpolations.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from profwin.errors import ConfigError, unknown_key
from profwin.inputs import parse_spec_text, read_spec_file
from profwin.spec import ACTIVITIES, RECORD_OPTIONS, ProfileSpec
from profwin.window import Window

__all__ = ["load_spec", "plain", "read_document", "select", "spec_from_mapping", "spec_from_yaml"]

_SPEC_KEYS = (
    "window",
    "profile_token_start",
    "profile_token_end",
    "activities",
    "record",
    "output_dir",
    "prefix",
    "ranks",
    "options",
    "on_unavailable",
)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _window_from(data: Mapping[str, Any], path: str) -> Window:
    value = data.get("window")
    token_keys = {k: data[k] for k in ("profile_token_start", "profile_token_end") if k in data}
    if value is not None and token_keys:
        raise ConfigError(
            f"give the window once: either 'window' or profile_token_start/profile_token_end (got both, {sorted(token_keys)})",
            path=path,
        )
    if token_keys:
        return Window.from_mapping(token_keys, path=path)
    if value is None:
        return Window()
    if isinstance(value, str):
        try:
            return Window.parse(value)
        except ConfigError as exc:
            raise exc.at(_join(path, "window")) from None
    return Window.from_mapping(plain(value), path=_join(path, "window"))


def _string_list(value: Any, path: str, allowed: tuple[str, ...]) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"must be a list drawn from {list(allowed)} (got {value!r})", path=path)
    for i, item in enumerate(value):
        if item not in allowed:
            raise ConfigError(f"must be one of {list(allowed)} (got {item!r})", path=f"{path}[{i}]")
    return list(value)


def spec_from_mapping(data: Mapping[str, Any], *, path: str = "", base_dir: str | os.PathLike[str] | None = None) -> ProfileSpec:
    """Build a spec from the dict form, e.g. ``{"window": "20:80", "record": ["shapes"]}``.

    Keys: ``window`` (``"20:80"`` or ``{start, end}``) or verl's ``profile_token_start`` /
    ``profile_token_end``; ``activities``; ``record`` (a list of ``shapes``, ``stack``,
    ``memory``, ``flops``, ``modules``); ``output_dir`` (relative paths are resolved against
    ``base_dir``, default the working directory); ``prefix``; ``ranks`` (``all``, a rank or a
    list); ``options`` (per-plugin mappings); ``on_unavailable`` (``error`` or ``drop``).
    """
    data = plain(data)
    if not isinstance(data, Mapping):
        raise ConfigError(f"a profile spec must be a mapping (got {type(data).__name__})", path=path)
    errors = [unknown_key(key, _SPEC_KEYS, path=path) for key in data if key not in _SPEC_KEYS]
    kwargs: dict[str, Any] = {}

    def field_from(key: str, build: Callable[[], Any]) -> None:
        # Each field is checked on its own (against an otherwise default spec), so one run
        # reports every bad key: that is what `profwin validate` prints.
        try:
            value = build()
            ProfileSpec(**{key: value})
            kwargs[key] = value
        except ConfigError as exc:
            errors.append(exc.at(path))

    field_from("window", lambda: _window_from(data, ""))
    if "record" in data:
        try:
            kwargs.update(dict.fromkeys(_string_list(data["record"], "record", RECORD_OPTIONS), True))
        except ConfigError as exc:
            errors.append(exc.at(path))
    if data.get("activities") is not None:
        field_from("activities", lambda: _string_list(data["activities"], "activities", ACTIVITIES))
    if "output_dir" in data:
        field_from("output_dir", lambda: _resolve_dir(data["output_dir"], base_dir))
    for key in ("prefix", "ranks", "on_unavailable"):
        if key in data:
            field_from(key, lambda key=key: data[key])  # type: ignore[misc]
    if "options" in data:
        field_from("options", lambda: plain(data["options"]))
    if errors:
        raise ConfigError.combine(errors)
    return ProfileSpec(**kwargs)


def _resolve_dir(out: Any, base_dir: str | os.PathLike[str] | None) -> Any:
    if isinstance(out, str) and base_dir is not None and out and not os.path.isabs(os.path.expanduser(out)):
        return os.path.join(base_dir, out)
    return out


def spec_from_yaml(text: str, *, path: str = "", base_dir: str | os.PathLike[str] | None = None) -> ProfileSpec:
    """Build a spec from YAML (needs PyYAML: ``pip install 'profwin-core[yaml]'``) or JSON text."""
    return spec_from_mapping(parse_spec_text(text, source="<text>"), path=path, base_dir=base_dir)


def load_spec(source: Any, *, at: str | None = None) -> ProfileSpec:
    """Load a spec from a mapping, an OmegaConf config, a verl config object, or a YAML/JSON file.

    ``at`` selects a subtree by its dotted path (``"actor_rollout_ref.rollout.profiler"``), so a
    whole trainer config can be read as it is. A profwin spec resolves a relative ``output_dir``
    against the file's folder; a verl block (recognised by its keys: see
    :func:`profwin.verl.load_verl`) keeps verl's meaning, with ``save_path`` relative to the working
    directory, and raises :class:`profwin.verl.ProfilingDisabled` when verl would profile nothing.
    """
    document, base_dir = read_document(source)
    data = select(document, at)
    from profwin.verl.config import block_kind, verl_spec  # profwin.verl.config reads documents through this module

    if block_kind(data) is not None:
        return verl_spec(document, at)
    if not isinstance(data, Mapping):
        raise ConfigError(f"a profile spec must be a mapping (got {type(data).__name__})", path=at or "")
    return spec_from_mapping(data, base_dir=base_dir, path=at or "")


def read_document(source: Any) -> tuple[Any, Path | None]:
    """A whole document and the folder relative paths in it start from (``None``: the working
    directory): a file path is read and parsed, an OmegaConf config is kept (its interpolations
    resolve against its root), and anything else goes through :func:`plain`."""
    if isinstance(source, (str, os.PathLike)):
        data, file = read_spec_file(source)
        return data, file.parent
    if _is_omegaconf(source):
        return source, None
    return plain(source), None


def plain(data: Any, *, path: str = "") -> Any:
    """verl's dataclasses, OmegaConf nodes, mappings and sequences as plain dicts and lists, at any depth.

    Dataclasses are read field by field: verl's ``BaseConfig`` is a ``Mapping`` whose ``in``
    raises ``AttributeError`` for a missing key, so the Mapping protocol is never used on it.
    OmegaConf nodes are converted with their interpolations resolved.
    """
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return {f.name: plain(getattr(data, f.name), path=_join(path, f.name)) for f in dataclasses.fields(data)}
    if _is_omegaconf(data):
        return plain(_to_container(data, path), path=path)
    if isinstance(data, Mapping):
        return {key: plain(value, path=_join(path, str(key))) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain(value, path=f"{path}[{i}]") for i, value in enumerate(data)]
    return data


def select(document: Any, at: str | None) -> Any:
    """The subtree of ``document`` at the dotted path ``at`` (all of it when ``None``), as plain
    data, with its ``${...}`` interpolations (``${oc.select:...}`` included) resolved against the
    whole document through OmegaConf (``pip install 'profwin-core[verl]'``)."""
    omegaconf = _omegaconf()
    if omegaconf is not None and not _is_omegaconf(document) and _interpolation(document):
        _check_expansion(document)
        document = _omegaconf_call(lambda: omegaconf.OmegaConf.create(document), "")
    node, walked = document, ""
    for key in at.split(".") if at else ():
        if not isinstance(node, Mapping):
            raise ConfigError(f"no key {key!r} under {walked} (it is a {type(node).__name__})", path="at")
        keys = [str(k) for k in node]
        if key not in keys:
            close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"keys: {', '.join(keys[:12])}{', ...' if len(keys) > 12 else ''}"
            raise ConfigError(f"no key {key!r} under {walked or 'the document root'} ({hint})", path="at")
        walked = _join(walked, key)
        node = _child(node, key, walked)
    data = plain(node, path=walked)
    interpolation = _interpolation(data)
    if interpolation is not None:
        where, text = interpolation
        raise ConfigError(
            f"holds the interpolation {text!r}, which needs OmegaConf to resolve: pip install 'profwin-core[verl]'",
            path=_join(walked, where),
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
                walk(child, _join(dotted, str(key)))
        elif isinstance(value, list):
            for i, child in enumerate(value):
                walk(child, _join(dotted, str(i)))
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
        found = _interpolation(value, f"{path}[{key}]" if isinstance(key, int) else _join(path, str(key)))
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
        raise ConfigError(f"OmegaConf cannot read it: {reason}", path=path) from None
