"""Engine versions: one type for every backend, on ``packaging`` (PEP 440).

Backends compare versions to pick a mechanism (vLLM 0.12 took the window as environment
variables, 0.13 as ``profiler_config``, 0.32 per session). A hand-written ``major.minor.patch``
regex takes ``0.12.0rc1`` for ``0.12.0``; PEP 440 orders it before, which is what a feature
check needs: a release candidate may lack what the release has.
"""

from __future__ import annotations

import os
import re
import sys
from functools import total_ordering

from attrs import frozen
from packaging.version import InvalidVersion, Version

from profwin import installed
from profwin.arguments import checked
from profwin.errors import ConfigError, shown

__all__ = ["EngineVersion", "engine_plugin_missing", "installed_version"]

_DISTRIBUTION_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,198}[A-Za-z0-9])?")
"""A distribution's name as PEP 508 writes it (bounded: no index holds a longer one)."""


@total_ordering
@frozen(eq=False)
class EngineVersion:
    """A released or pre-release engine version (``0.32.0``, ``v0.12.0rc1``, ``0.13.0+cpu``).

    Compares with another ``EngineVersion`` or with text (``version >= "0.13"``); the local part
    (``+cpu``) is ignored, so a CPU build orders like its release.
    """

    text: str
    key: Version
    """The version without its local part: what comparisons use."""

    @classmethod
    def parse(cls, text: object, *, path: str = "engine_version") -> EngineVersion:
        if isinstance(text, EngineVersion):
            return text
        parsed = None
        # The length first: packaging turns each number into an int, and Python refuses
        # int() of a string past 4,300 digits with a ValueError (a server may answer anything).
        if isinstance(text, str) and len(text.strip()) <= 64:
            try:
                parsed = Version(text.strip())
            except (InvalidVersion, ValueError):
                parsed = None
        if parsed is None:
            raise ConfigError(f"must be a version like 0.32.0 or 0.12.0rc1 (got {shown(text)})", path=path)
        return cls(str(text).strip(), Version(parsed.public))

    def __lt__(self, other: object) -> bool:
        return self.key < EngineVersion.parse(other).key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (EngineVersion, str)):
            return NotImplemented
        try:
            return self.key == EngineVersion.parse(other).key
        except ConfigError:
            return False

    def __hash__(self) -> int:
        return hash(self.key)

    def __str__(self) -> str:
        return str(self.key)


@checked
def installed_version(module: str, distributions: tuple[str, ...]) -> str | None:
    """The version of a package importable here (an engine, a profwin distribution): the already-imported ``module``'s
    ``__version__``, else the first of ``distributions`` that is installed, else ``None``.
    Never imports the engine. A name that no distribution can have (empty, or not as PEP 508
    writes names) is a :class:`ConfigError`."""
    for i, name in enumerate(distributions):
        if not _DISTRIBUTION_NAME.fullmatch(name):
            raise ConfigError(
                f"must be a distribution name: letters, digits, '.', '_' and '-', starting and ending with a "
                f"letter or digit (got {shown(name)})",
                path=f"distributions[{i}]",
            )
    found = getattr(sys.modules.get(module), "__version__", None)
    if isinstance(found, str):
        try:
            Version(found)
            return found
        except InvalidVersion:
            pass
    return next(filter(None, map(installed.version, distributions)), None)


@checked
def engine_plugin_missing(distribution: str, group: str, allow_env: str, *, empty_allows_all: bool) -> str | None:
    """Why an engine started from this environment would not load ``distribution``'s entry point
    in the engine's own plugin ``group`` (``vllm.general_plugins``, ``sglang.srt.plugins``), or
    ``None`` when it would: the entry point is installed here, and ``$allow_env`` (the engine's
    comma-separated allow-list: ``VLLM_PLUGINS``, ``SGLANG_PLUGINS``), when set, names it
    (``empty_allows_all``: an empty value allows every plugin, as SGLang reads it; vLLM reads an
    empty ``VLLM_PLUGINS`` as a list that names none).

    The one check every engine-side profwin plugin is judged by before an engine runs (verl's
    builders launch the engine from this environment); never imports the engine."""
    names = [ep.name for ep in installed.entry_points(group) if ep.dist.name == distribution]
    if not names:
        return f"{distribution}'s {group} entry point is not installed in this environment"
    allowed = {name.strip() for name in os.environ.get(allow_env, "").split(",") if name.strip()}
    restricted = bool(allowed) or (allow_env in os.environ and not empty_allows_all)
    if restricted and not allowed.intersection(names):
        return f"{allow_env}={os.environ[allow_env]!r} leaves out {names[0]!r}, so the engine does not load it"
    return None
