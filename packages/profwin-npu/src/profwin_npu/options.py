"""Ascend options (``spec.options["npu"]``): parsed and checked before any profiling starts.

torch_npu never raises on a bad option: it prints a ``[WARNING]`` and resets the value to its
default, so a typo silently profiles something else. profwin checks every option here and
raises :class:`profwin.ConfigError` naming the field, the value and the rule instead.

verl's NPU tool block (``level``, ``analysis``) lands here through ``profwin_verl.spec_from_verl``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from profwin.plugin import ConfigError, ProfileSpec, checked, shown, unknown_key

__all__ = [
    "AIC_METRICS",
    "EXPORT_TYPES",
    "LEVELS",
    "OPTION_KEYS",
    "NpuOptions",
    "npu_options",
]

LEVELS: tuple[str, ...] = ("level_none", "level0", "level1", "level2")
"""Collection levels, lightest first (verl's spelling; torch_npu's ``ProfilerLevel`` names differ
only in case: ``Level_none``, ``Level0``...)."""

AIC_METRICS: tuple[str, ...] = (
    "AiCoreNone",
    "PipeUtilization",
    "ArithmeticUtilization",
    "Memory",
    "MemoryL0",
    "MemoryUB",
    "ResourceConflictRatio",
    "L2Cache",
    "MemoryAccess",
)
"""AI Core metrics, as the attribute names of ``torch_npu.profiler.AiCMetrics``."""

EXPORT_TYPES: tuple[str, ...] = ("text", "db")
"""``text``: json/csv (``trace_view.json``, ``kernel_details.csv``...); ``db``: SQLite only."""

OPTION_KEYS: tuple[str, ...] = (
    "level",
    "aic_metrics",
    "l2_cache",
    "data_simplification",
    "export_type",
    "analysis",
    "mstx",
    "msprof_tx",
    "mstx_domain_include",
    "mstx_domain_exclude",
)
"""Keys accepted under ``options.npu`` (``msprof_tx`` is torch_npu's deprecated name for ``mstx``)."""

_PATH = "options.npu"
_LIGHT_LEVELS = ("level_none", "level0")  # levels at which torch_npu collects no AI Core metrics
# Case- and underscore-insensitive lookup, so "pipe_utilization" and "PipeUtilization" both work.
_METRIC_BY_KEY = {name.lower(): name for name in AIC_METRICS} | {"none": "AiCoreNone"}


@frozen(kw_only=True)
class NpuOptions:
    """Validated Ascend options with every default filled in.

    Attributes:
        level: ``level_none`` (mstx marks only), ``level0`` (framework + NPU ops; default, as
            verl and torch_npu), ``level1`` (+ AscendCL, AI Core metrics, communication;
            vllm-ascend's and SGLang's fixed choice), ``level2`` (+ runtime and AI CPU).
        aic_metrics: a name from :data:`AIC_METRICS`; ``AiCoreNone`` at ``level_none``/
            ``level0`` (torch_npu collects none there), ``PipeUtilization`` above.
        l2_cache: collect ``l2_cache.csv`` (default off).
        data_simplification: drop intermediate data after parsing (default on, as torch_npu,
            verl and vllm-ascend).
        export_type: ``("text",)`` (default), ``("db",)`` (verl's choice) or both.
        analysis: parse the ``*_ascend_pt`` folder when the window closes (synchronous, can
            take minutes); off by default, as verl and vllm-ascend: parse later with
            :func:`profwin_npu.analyse`.
        mstx: collect mstx marks (forced on at ``level_none``, which collects nothing else).
        mstx_domain_include, mstx_domain_exclude: mstx domains to keep or drop (not both).
        explicit: the option keys the user set, so engine flavours can warn about exactly those.
    """

    level: str = "level0"
    aic_metrics: str = "AiCoreNone"
    l2_cache: bool = False
    data_simplification: bool = True
    export_type: tuple[str, ...] = ("text",)
    analysis: bool = False
    mstx: bool = False
    mstx_domain_include: tuple[str, ...] = ()
    mstx_domain_exclude: tuple[str, ...] = ()
    explicit: frozenset[str] = frozenset()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, path: str = _PATH) -> NpuOptions:
        """Check ``data`` (the ``options.npu`` mapping) and fill in the defaults."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"must be a mapping of Ascend options (got {shown(data)})", path=path)
        for key in data:
            if key not in OPTION_KEYS:
                raise unknown_key(key, OPTION_KEYS, path=path)
        level = _level(data.get("level", "level0"), f"{path}.level")
        light = level in _LIGHT_LEVELS
        metrics = _metric(data.get("aic_metrics"), level, f"{path}.aic_metrics")
        mstx = _mstx(data, level, path)
        include = _domains(data.get("mstx_domain_include", ()), f"{path}.mstx_domain_include")
        exclude = _domains(data.get("mstx_domain_exclude", ()), f"{path}.mstx_domain_exclude")
        if (include or exclude) and not mstx:
            key = "mstx_domain_include" if include else "mstx_domain_exclude"
            raise ConfigError("mstx domains filter mstx marks, which are off; set mstx: true", path=f"{path}.{key}")
        if include and exclude:
            raise ConfigError(
                f"give mstx_domain_include or mstx_domain_exclude, not both (torch_npu would silently drop "
                f"the exclude list {list(exclude)})",
                path=f"{path}.mstx_domain_exclude",
            )
        return cls(
            level=level,
            aic_metrics=metrics if metrics is not None else ("AiCoreNone" if light else "PipeUtilization"),
            l2_cache=_bool(data, "l2_cache", False, path),
            data_simplification=_bool(data, "data_simplification", True, path),
            export_type=_export_type(data.get("export_type", "text"), f"{path}.export_type"),
            analysis=_bool(data, "analysis", False, path),
            mstx=mstx,
            mstx_domain_include=include,
            mstx_domain_exclude=exclude,
            explicit=frozenset("mstx" if key == "msprof_tx" else key for key in data),
        )


@checked
def npu_options(spec: ProfileSpec) -> NpuOptions:
    """The Ascend options of ``spec`` (``spec.options["npu"]``), validated, defaults filled in."""
    return NpuOptions.from_mapping(spec.plugin_options("npu"))


def _level(value: object, path: str) -> str:
    # torch_npu spells the levels Level0/Level_none; accept both spellings, keep verl's.
    if isinstance(value, str) and value.lower() in LEVELS:
        return value.lower()
    raise ConfigError(f"must be one of {list(LEVELS)} (got {shown(value)})", path=path)


def _metric(value: object, level: str, path: str) -> str | None:
    if value is None:
        return None
    name = _METRIC_BY_KEY.get(value.replace("_", "").lower()) if isinstance(value, str) else None
    if name is None:
        raise ConfigError(f"must be one of {list(AIC_METRICS)} (got {shown(value)})", path=path)
    if name != "AiCoreNone" and level in _LIGHT_LEVELS:
        # torch_npu would reset it to AiCoreNone with a printed warning and collect nothing.
        raise ConfigError(f"{name!r} needs level1 or level2 (level is {level!r})", path=path)
    return name


def _mstx(data: Mapping[str, Any], level: str, path: str) -> bool:
    given = {key: data[key] for key in ("mstx", "msprof_tx") if key in data}
    for key, value in given.items():
        if not isinstance(value, bool):
            raise ConfigError(f"must be true or false (got {shown(value)})", path=f"{path}.{key}")
    if len(set(given.values())) > 1:
        raise ConfigError(f"msprof_tx is the old name of mstx; they disagree (got {given})", path=f"{path}.msprof_tx")
    if level == "level_none":
        if False in given.values():
            raise ConfigError("level_none collects only mstx marks, so mstx cannot be false", path=f"{path}.mstx")
        return True
    return bool(given and next(iter(given.values())))


def _bool(data: Mapping[str, Any], key: str, default: bool, path: str) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false (got {shown(value)})", path=f"{path}.{key}")
    return value


def _export_type(value: object, path: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        raise ConfigError(f"must be 'text', 'db' or a list of them (got {shown(value)})", path=path)
    chosen = []
    for i, item in enumerate(items):
        if not isinstance(item, str) or item.lower() not in EXPORT_TYPES:
            where = path if isinstance(value, str) else f"{path}[{i}]"
            raise ConfigError(f"must be one of {list(EXPORT_TYPES)} (got {shown(item)})", path=where)
        chosen.append(item.lower())
    return tuple(t for t in EXPORT_TYPES if t in chosen)


def _domains(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"must be a list of mstx domain names (got {shown(value)})", path=path)
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise ConfigError(f"must be a non-empty domain name (got {shown(item)})", path=f"{path}[{i}]")
    return tuple(dict.fromkeys(value))
