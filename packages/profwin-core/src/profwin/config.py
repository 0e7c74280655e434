"""Loading a :class:`~profwin.ProfileSpec` from dicts, YAML/JSON text or files.

Every profwin spec goes through :func:`spec_from_mapping`, so a rule is checked in one place and
each error carries the path of the key that broke it. :func:`load_spec` reads the document
(:mod:`profwin.documents`) and first offers it to the installed spec formats (entry points in
``profwin.spec_formats``, e.g. profwin-verl's reader of verl's profiler blocks); a document no
format claims is a profwin spec. Core itself knows no other format.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from profwin.arguments import check_nesting, checked
from profwin.discovery import spec_formats
from profwin.documents import join_path, plain, read_document, select
from profwin.errors import ConfigError, shown, unknown_key
from profwin.inputs import MAX_NODES, expand_user, parse_json, parse_spec_text
from profwin.spec import ACTIVITIES, RECORD_OPTIONS, ProfileSpec
from profwin.window import Window

__all__ = ["load_spec", "spec_from_mapping", "spec_from_yaml", "spec_mapping"]

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
    "part_steps",
    "part_events",
)


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
            raise exc.at(join_path(path, "window")) from None
    return Window.from_mapping(plain(value), path=join_path(path, "window"))


def _string_list(value: Any, path: str, allowed: tuple[str, ...]) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"must be a list drawn from {list(allowed)} (got {shown(value)})", path=path)
    for i, item in enumerate(value):
        if item not in allowed:
            raise ConfigError(f"must be one of {list(allowed)} (got {shown(item)})", path=f"{path}[{i}]")
    return list(value)


@checked
def spec_from_mapping(data: Mapping[Any, Any], *, path: str = "", base_dir: str | os.PathLike[str] | None = None) -> ProfileSpec:
    """Build a spec from the dict form, e.g. ``{"window": "20:80", "record": ["shapes"]}``.

    Keys: ``window`` (``"20:80"`` or ``{start, end}``) or verl's ``profile_token_start`` /
    ``profile_token_end``; ``activities``; ``record`` (a list of ``shapes``, ``stack``,
    ``memory``, ``flops``, ``modules``, ``timeline``); ``output_dir`` (relative paths are resolved against
    ``base_dir``, default the working directory); ``prefix``; ``ranks`` (``all``, a rank or a
    list); ``options`` (per-plugin mappings); ``on_unavailable`` (``error`` or ``drop``);
    ``part_steps`` and ``part_events`` (the bounds of one part trace of a long window, or ``null``).
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
    for key in ("prefix", "ranks", "on_unavailable", "part_steps", "part_events"):
        if key in data:
            field_from(key, lambda key=key: data[key])  # type: ignore[misc]
    if "options" in data:
        field_from("options", lambda: plain(data["options"]))
    if errors:
        raise ConfigError.combine(errors)
    return ProfileSpec(**kwargs)


def _resolve_dir(out: Any, base_dir: str | os.PathLike[str] | None) -> Any:
    if isinstance(out, str) and base_dir is not None and out and not expand_user(out, what="output_dir").is_absolute():
        return os.path.join(base_dir, out)
    return out


@checked
def spec_from_yaml(text: str, *, path: str = "", base_dir: str | os.PathLike[str] | None = None) -> ProfileSpec:
    """Build a spec from YAML (needs PyYAML: ``pip install 'profwin-core[yaml]'``) or JSON text."""
    return spec_from_mapping(parse_spec_text(text, source="<text>"), path=path, base_dir=base_dir)


@checked
def load_spec(source: Any, *, at: str | None = None) -> ProfileSpec:
    """Load a spec from a mapping, an OmegaConf config, a dataclass config, or a YAML/JSON file.

    ``at`` selects a subtree by its dotted path (``"actor_rollout_ref.rollout.profiler"``), so a
    whole trainer config can be read as it is. Each installed spec format
    (``profwin.spec_formats`` entry points, see :class:`profwin.plugin.SpecFormat`) is asked first
    and keeps its own meaning: profwin-verl reads verl's profiler blocks with ``save_path``
    relative to the working directory and raises :class:`profwin.ProfilingDisabled` when verl
    would profile nothing. Anything else is a profwin spec, whose relative ``output_dir`` is
    resolved against the file's folder.
    """
    document, base_dir = read_document(source)
    data = select(document, at)
    for read in spec_formats():
        spec = read(document, data, at)
        if spec is not None:
            return spec
    if not isinstance(data, Mapping):
        raise ConfigError(f"a profile spec must be a mapping (got {type(data).__name__})", path=at or "")
    return spec_from_mapping(data, base_dir=base_dir, path=at or "")


def spec_mapping(value: object, *, path: str, output_dir: str) -> dict[str, Any]:
    """A spec as a trainer's flag or config key gives it — a window's text (``"20:80"``,
    ``"2:6 tokens"``), a spec as JSON text, or a mapping — as the mapping :func:`spec_from_mapping`
    reads, checked by it now (a bad one fails at launch, not in a worker), ``output_dir`` kept as
    written (default ``output_dir``: each process that uses it resolves it). It must say the
    window. JSON text and mappings get the bounds of every spec document (100 levels, 100,000
    values, integers within Python's digit limit); anything else is a :class:`ConfigError` at
    ``path``, never a ``RecursionError``. The one reader of every trainer package's spec setting
    (profwin-openrlhf's ``--profwin.spec``, profwin-slime's ``profwin_spec``). It checks its own
    arguments, as :func:`~profwin.inputs.expand_user` does: its errors name the caller's field."""
    for name, given in (("path", path), ("output_dir", output_dir)):
        if not isinstance(given, str):
            raise ConfigError(f"must be a str (got {shown(given)})", path=name)
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("{"):
            window = Window.parse(text, field_name=path)
            return {"window": str(window), "output_dir": output_dir}
        try:
            value = parse_json(text, source="the JSON text")
        except ConfigError as exc:
            raise ConfigError(f"must be a window like '20:80' or a spec as JSON ({exc}; got {shown(text)})", path=path) from None
    if not isinstance(value, Mapping):
        raise ConfigError(f"must be a window like '20:80' or a spec mapping (got {shown(value)})", path=path)
    check_nesting(value, path, max_nodes=MAX_NODES)
    if "window" not in value and "profile_token_start" not in value:
        raise ConfigError(
            f'must say the window to record, e.g. {{"window": "20:80"}} (got keys {shown(sorted(map(str, value)))})', path=path
        )
    data = dict(value)
    data.setdefault("output_dir", output_dir)
    if not isinstance(data["output_dir"], str) or not data["output_dir"].strip():
        raise ConfigError(f"must be a folder's path (got {shown(data['output_dir'])})", path=f"{path}.output_dir")
    spec_from_mapping(data, path=path)  # every other key checked by the one reader
    return data
