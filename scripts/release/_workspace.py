"""The workspace's distributions, as the release scripts see them: name -> directory and metadata."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy brings tomli on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
UNRELEASED = "## Unreleased"


def projects() -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every distribution under packages/: name -> (directory, its [project] table)."""
    found = {}
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        found[project["name"]] = (pyproject.parent, project)
    return found


def project(name: str) -> tuple[Path, dict[str, Any]]:
    """One distribution by name; an unknown name lists the known ones."""
    known = projects()
    if name not in known:
        sys.exit(f"unknown distribution {name!r}; the workspace has: {', '.join(known)}")
    return known[name]


def version_heading(version: str) -> re.Pattern[str]:
    """The CHANGELOG heading of a released version: ``## 0.2.0`` or ``## 0.2.0 — 2026-11-29``."""
    return re.compile(rf"^## {re.escape(version)}(?:\s+[—-]\s+\S+)?\s*$", re.MULTILINE)


def changelog_section(text: str, version: str) -> str | None:
    """The body of ``version``'s section (up to the next ``## `` heading), or None if absent."""
    match = version_heading(version).search(text)
    if match is None:
        return None
    rest = text[match.end() :]
    following = re.search(r"^## ", rest, re.MULTILINE)
    return (rest[: following.start()] if following else rest).strip()
