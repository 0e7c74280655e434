"""The workspace's distributions, as the release scripts see them: name -> directory and metadata,
and how ``uv`` reaches each one.

Every folder under packages/ is a distribution. Most are members of the uv workspace; one is not:
profwin-ray is a path source the root lists in ``[tool.uv.workspace] exclude`` (uv syncs every
member into the dev environment, and ray is a large stack only its own tests need). ``uv version
--package`` knows members only, so for that one the scripts name its folder (``--project DIR``)
and re-lock the root afterwards, whose uv.lock records its version through the umbrella's extra.
"""

from __future__ import annotations

import re
import subprocess
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


def outside_workspace() -> set[Path]:
    """The package folders the root's ``[tool.uv.workspace] exclude`` keeps out of the workspace."""
    workspace = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    return {(ROOT / p).resolve() for p in workspace.get("exclude", [])}


def uv_names(name: str) -> list[str]:
    """How ``uv version`` names the distribution: ``--package NAME`` for a workspace member,
    ``--project DIR`` for a package outside the workspace."""
    directory, _ = project(name)
    return ["--project", str(directory)] if directory.resolve() in outside_workspace() else ["--package", name]


def current_version(name: str) -> str:
    """The version uv reads for ``name`` (its pyproject.toml), touching neither lock nor venv."""
    names = uv_names(name)
    # --frozen: the workspace's uv.lock as it is; a package outside the workspace has no lock of its
    # own, and reading its version without a bump writes none.
    frozen = ["--frozen"] if names[0] == "--package" else []
    done = subprocess.run(["uv", "version", *names, "--short", *frozen], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def set_version(name: str, how: list[str]) -> None:
    """``uv version`` with ``how`` (``--bump PART`` or a version) for ``name``, and the root's uv.lock
    updated; the dev venv is left alone."""
    names = uv_names(name)
    if names[0] == "--package":
        subprocess.run(["uv", "version", *names, *how, "--no-sync"], cwd=ROOT, check=True)
        return
    # Outside the workspace: --frozen writes the pyproject.toml without making a lock for the
    # package itself; the root's lock, which holds it as the umbrella's path source, is re-locked.
    subprocess.run(["uv", "version", *names, *how, "--frozen"], cwd=ROOT, check=True)
    subprocess.run(["uv", "lock"], cwd=ROOT, check=True)


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
