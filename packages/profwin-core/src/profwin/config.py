"""Loading a :class:`~profwin.ProfileSpec` from dicts, YAML/JSON text or files, and verl configs.

Every loader goes through :func:`spec_from_mapping` (or :func:`spec_from_verl` for verl's
profiler blocks), so a rule is checked in one place and each error carries the path of the key
that broke it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from profwin.errors import ConfigError, unknown_key
from profwin.inputs import parse_spec_text, read_spec_file
from profwin.spec import ACTIVITIES, RECORD_OPTIONS, ProfileSpec
from profwin.window import Window

__all__ = ["load_spec", "spec_from_mapping", "spec_from_verl", "spec_from_yaml"]

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

# verl's contents entries: activities, and what to record (``module`` is verl's spelling).
_VERL_CONTENTS = {
    "cpu": "cpu",
    "cuda": "cuda",
    "npu": "npu",
    "memory": "memory",
    "shapes": "shapes",
    "stack": "stack",
    "module": "modules",
}
_VERL_TOOL_KEYS = (
    "contents",
    "profile_token_start",
    "profile_token_end",
    "level",
    "analysis",
    "discrete",
    "name",
    "schedule",
    "_target_",
)
_VERL_ROLE_KEYS = (
    "tool", "enable", "all_ranks", "ranks", "save_path", "tool_config", "global_tool_config", "relocate_results",
    "finish_hook_cmd", "finish_hook_all_ranks", "finish_hook_ranks", "_target_",
)  # fmt: skip


def _plain(data: Any) -> Any:
    """Turn an OmegaConf ``DictConfig``/``ListConfig`` into plain containers; pass others through."""
    module = type(data).__module__
    if module.startswith("omegaconf"):
        from omegaconf import OmegaConf  # only reachable when the caller already uses omegaconf

        return OmegaConf.to_container(data, resolve=True)
    return data


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
    return Window.from_mapping(_plain(value), path=_join(path, "window"))


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
    data = _plain(data)
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
        field_from("options", lambda: _plain(data["options"]))
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


def load_spec(source: Mapping[str, Any] | str | os.PathLike[str]) -> ProfileSpec:
    """Load a spec from a mapping (or OmegaConf config), or from a YAML/JSON file path.

    A file may hold the spec itself, a verl role ``profiler`` block, or a document with such a
    block under ``profiler``; verl blocks are recognised by their ``tool_config``/``contents`` keys.
    """
    if isinstance(source, (str, os.PathLike)):
        data, file = read_spec_file(source)
        return _spec_from_document(data, base_dir=file.parent)
    return _spec_from_document(_plain(source), base_dir=None)


def _spec_from_document(data: Any, *, base_dir: Path | None) -> ProfileSpec:
    if isinstance(data, Mapping) and set(data) == {"profiler"} and isinstance(data["profiler"], Mapping):
        return spec_from_verl(data["profiler"], path="profiler", base_dir=base_dir)
    if isinstance(data, Mapping) and ("tool_config" in data or "contents" in data):
        return spec_from_verl(data, base_dir=base_dir)
    if not isinstance(data, Mapping):
        raise ConfigError(f"a profile spec must be a mapping (got {type(data).__name__})")
    return spec_from_mapping(data, base_dir=base_dir)


def spec_from_verl(
    block: Mapping[str, Any],
    *,
    tool: str | None = None,
    path: str = "",
    base_dir: str | os.PathLike[str] | None = None,
) -> ProfileSpec:
    """Build a spec from a verl profiler config.

    ``block`` is either a role ``profiler`` block (``tool``, ``ranks``, ``all_ranks``,
    ``save_path``, ``tool_config.{torch,npu}``…) or one tool block (``contents``,
    ``profile_token_start``, ``profile_token_end``, ``level``, ``analysis``, ``discrete``).
    ``contents`` maps ``cpu``/``cuda``/``npu`` to activities and ``memory``/``shapes``/``stack``/
    ``module`` to what is recorded; NPU ``level``/``analysis`` go to ``options["npu"]``.
    ``discrete`` is accepted and has no effect: every profwin session is its own trace.
    """
    block = _plain(block)
    if not isinstance(block, Mapping):
        raise ConfigError(f"a verl profiler block must be a mapping (got {type(block).__name__})", path=path)
    spec_data: dict[str, Any] = {}
    if "tool_config" in block:
        for key in block:
            if key not in _VERL_ROLE_KEYS:
                raise unknown_key(key, _VERL_ROLE_KEYS, path=path)
        tool = tool or block.get("tool") or "torch"
        configs = block["tool_config"] or {}
        if not isinstance(configs, Mapping) or tool not in configs:
            raise ConfigError(
                f"has no block for tool {tool!r} (found {sorted(configs) if isinstance(configs, Mapping) else configs!r})",
                path=_join(path, "tool_config"),
            )
        tool_path = _join(path, f"tool_config.{tool}")
        tool_block = configs[tool] or {}
        if block.get("all_ranks"):
            spec_data["ranks"] = "all"
        elif block.get("ranks"):
            spec_data["ranks"] = block["ranks"]
        if block.get("save_path"):
            spec_data["output_dir"] = block["save_path"]
    else:
        tool_path, tool_block = path, block
        tool = tool or ("npu" if {"level", "analysis"} & set(block) else "torch")
    if not isinstance(tool_block, Mapping):
        raise ConfigError(f"must be a mapping (got {tool_block!r})", path=tool_path)
    for key in tool_block:
        if key not in _VERL_TOOL_KEYS:
            raise unknown_key(key, _VERL_TOOL_KEYS, path=tool_path)
    contents = _string_list(tool_block.get("contents") or [], _join(tool_path, "contents"), tuple(_VERL_CONTENTS))
    activities = [_VERL_CONTENTS[c] for c in contents if c in ACTIVITIES]
    if activities:
        spec_data["activities"] = activities
    spec_data["record"] = [_VERL_CONTENTS[c] for c in contents if c not in ACTIVITIES]
    for key in ("profile_token_start", "profile_token_end"):
        if tool_block.get(key) is not None:
            spec_data[key] = tool_block[key]
    if "discrete" in tool_block and not isinstance(tool_block["discrete"], bool):
        raise ConfigError(f"must be true or false (got {tool_block['discrete']!r})", path=_join(tool_path, "discrete"))
    npu_options = {k: tool_block[k] for k in ("level", "analysis") if k in tool_block}
    if npu_options:
        spec_data["options"] = {"npu": npu_options}
    try:
        window = _window_from(spec_data, "")
    except ConfigError as exc:
        raise exc.at(tool_path) from None
    spec_data.pop("profile_token_start", None)
    spec_data.pop("profile_token_end", None)
    spec_data["window"] = {"start": window.start, "end": window.end}
    return spec_from_mapping(spec_data, path=path, base_dir=base_dir)
