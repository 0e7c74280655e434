"""The installed distributions and their entry points, found as ``importlib.metadata`` finds them,
without importing it.

How it works, and why: docs/internals.md, ``profwin.installed``.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable
from importlib.machinery import PathFinder

__all__ = ["Distribution", "EntryPoint", "distribution", "entry_points", "normalized", "version"]

_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")
"""An entry point's value (``module:attr [extras]``), as importlib.metadata reads it."""


def normalized(name: str) -> str:
    """A distribution's name as PyPI compares names (PEP 503): ``Profwin_Core`` is ``profwin-core``."""
    return re.sub(r"[-_.]+", "-", name).lower()


class Distribution:
    """One installed distribution: its metadata's fields and its entry points, each read at first use."""

    def __init__(self, read: Callable[[str], str | None]) -> None:
        self._read = read  # a file of the distribution's metadata by name, or None

    @functools.cached_property
    def _fields(self) -> dict[str, list[str]]:
        # The header of METADATA (PKG-INFO for an egg-info, '' for one that is a file), as email reads it.
        text = self._read("METADATA") or self._read("PKG-INFO") or self._read("") or ""
        fields: dict[str, list[str]] = {}
        last: list[str] = []
        for line in text.splitlines():
            if not line.strip():
                break
            if line[0] in " \t" and last:
                last[-1] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                last = fields.setdefault(key.strip().lower(), [])
                last.append(value.strip())
        return fields

    def field(self, name: str) -> str | None:
        """The first value of the metadata field ``name`` (``Author``), or ``None`` when absent."""
        values = self._fields.get(name.lower())
        return values[0] if values else None

    @property
    def name(self) -> str:
        return self.field("Name") or "?"

    @property
    def version(self) -> str:
        return self.field("Version") or "?"

    @functools.cached_property
    def entry_points(self) -> tuple[EntryPoint, ...]:
        """Its ``entry_points.txt``: ``[group]`` lines, then ``name = value`` lines; comments skipped."""
        found, group = [], None
        for line in (self._read("entry_points.txt") or "").splitlines():
            line = line.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("[") and line.endswith("]"):
                group = line.strip("[]")
            elif group is not None and "=" in line:
                name, _, value = line.partition("=")
                found.append(EntryPoint(name.strip(), value.strip(), group, self))
        return tuple(found)


class EntryPoint:
    """One entry point: ``name = value`` under ``group``, registered by ``dist``."""

    def __init__(self, name: str, value: str, group: str, dist: Distribution) -> None:
        self.name, self.value, self.group, self.dist = name, value, group, dist

    def __repr__(self) -> str:
        return f"EntryPoint(name={self.name!r}, value={self.value!r}, group={self.group!r})"

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def load(self) -> object:
        """The object the value names, its module imported."""
        match = _VALUE.match(self.value)
        if match is None:
            raise ImportError(f"entry point {self.name!r} of {self.dist.name}: {self.value!r} is not 'module:attribute'")
        found: object = importlib.import_module(match.group("module"))
        for attr in filter(None, (match.group("attr") or "").split(".")):
            found = getattr(found, attr)
        return found


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, in ``importlib.metadata.entry_points(group=...)``'s order."""
    return [ep for dist in _distributions_by_name().values() for ep in dist.entry_points if ep.group == group]


def distribution(name: str) -> Distribution | None:
    """The installed distribution ``name`` (the first on ``sys.path``), or ``None``."""
    return _distributions_by_name().get(normalized(name))


def version(name: str) -> str | None:
    """The installed version of the distribution ``name``, or ``None`` when it is not installed."""
    found = distribution(name)
    return None if found is None else found.field("Version")


def _distributions_by_name() -> dict[str, Distribution]:
    """Each installed distribution, the first of each name on ``sys.path``.

    importlib.metadata's path finder lists each ``sys.path`` folder for ``*.dist-info`` and
    ``*.egg-info`` and names each by what comes before its first ``-``; so does this, a folder
    listed again only when its mtime changes (as importlib.metadata caches it). A zip or an egg
    on the path, or another finder of distributions, is left to importlib.metadata itself."""
    first: dict[str, Distribution] = {}
    others = any(finder is not PathFinder and hasattr(finder, "find_distributions") for finder in sys.meta_path)
    if others or any(not isinstance(p, str) or p.endswith(".egg") or os.path.isfile(p) for p in sys.path):
        import importlib.metadata

        for found in importlib.metadata.distributions():
            first.setdefault(normalized(found.metadata["Name"] or ""), Distribution(found.read_text))
        return first
    for entry in sys.path:
        try:
            mtime = os.stat(entry or ".").st_mtime_ns
        except OSError:
            continue
        for name, dist in _folder(entry, mtime):
            first.setdefault(name, dist)
    return first


@functools.lru_cache(maxsize=256)
def _folder(entry: str, mtime: int) -> tuple[tuple[str, Distribution], ...]:
    try:
        children = os.listdir(entry or ".")
    except OSError:
        return ()
    return tuple(
        (
            normalized(child.lower().rpartition(".")[0].partition("-")[0]),
            Distribution(functools.partial(_read, os.path.join(entry, child))),
        )
        for child in children
        if child.lower().endswith((".dist-info", ".egg-info"))
    )


def _read(folder: str, name: str) -> str | None:
    try:
        with open(os.path.join(folder, name) if name else folder, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError):  # absent, a folder, unreadable: importlib.metadata's None too
        return None
