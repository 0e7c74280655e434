"""Bump one distribution's version and date its changelog: the first step of a release.

    python scripts/release/bump.py profwin-vllm minor      # or major, patch, rc, ..., or 0.2.0

1. refuses if the package's CHANGELOG.md has nothing under ``## Unreleased``;
2. runs ``uv version --package NAME --bump PART --no-sync`` (or sets an explicit version), which
   rewrites the package's pyproject.toml and uv.lock and leaves .venv alone; for a package outside
   the workspace (profwin-ray) ``uv version --project DIR ... --frozen``, then ``uv lock``;
3. renames the ``## Unreleased`` section to ``## VERSION — DATE`` and opens a new, empty one;
4. for profwin-core, lists the packages whose ``profwin-core`` range excludes the new version;
5. prints the commit, tag and push commands (docs/releasing.md).
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys

from _workspace import ROOT, UNRELEASED, current_version, project, projects, set_version

BUMPS = ("major", "minor", "patch", "stable", "alpha", "beta", "rc", "post", "dev")
CORE = "profwin-core"


def stamp(changelog: str, version: str, date: str) -> str:
    """Turn the Unreleased section into ``version``'s and open a new, empty Unreleased section."""
    start = changelog.find(UNRELEASED)
    if start < 0:
        raise SystemExit(f"CHANGELOG.md has no '{UNRELEASED}' section")
    body_start = start + len(UNRELEASED)
    following = re.search(r"^## ", changelog[body_start:], re.MULTILINE)
    body = changelog[body_start : body_start + following.start()] if following else changelog[body_start:]
    if not body.strip():
        raise SystemExit(f"nothing under '{UNRELEASED}' in CHANGELOG.md: write what changed first")
    return f"{changelog[:start]}{UNRELEASED}\n\n## {version} — {date}{changelog[body_start:]}"


def excluded_by(version: str) -> list[str]:
    """Packages whose requirement on profwin-core does not admit ``version``."""
    from packaging.requirements import Requirement

    stale = []
    for name, (_, meta) in projects().items():
        for text in meta.get("dependencies", []):
            req = Requirement(text)
            if req.name == CORE and not req.specifier.contains(version, prereleases=True):
                stale.append(f"{name} ({text})")
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="distribution name, e.g. profwin-vllm")
    parser.add_argument("bump", help=f"one of {', '.join(BUMPS)}, or an explicit version such as 0.2.0")
    parser.add_argument("--date", default=datetime.date.today().isoformat(), help="release date (default today)")
    args = parser.parse_args()

    directory, _ = project(args.package)
    changelog = directory / "CHANGELOG.md"
    stamp(changelog.read_text(), "check", args.date)  # fail before touching anything

    how = ["--bump", args.bump] if args.bump in BUMPS else [args.bump]
    set_version(args.package, how)
    version = current_version(args.package)
    changelog.write_text(stamp(changelog.read_text(), version, args.date))

    if args.package == CORE:
        for stale in excluded_by(version):
            print(f"warning: {stale} excludes {CORE} {version}: widen it once its tests pass, and release it", file=sys.stderr)
    tag = f"{args.package}=={version}"
    rel = directory.relative_to(ROOT)
    print(f"{args.package} is now {version}. Review, then:\n")
    print(f"  git commit -m 'release {tag}' -- {rel}/pyproject.toml {rel}/CHANGELOG.md uv.lock")
    print(f"  git tag -a '{tag}' -m '{tag}'")
    print(f"  git push origin main '{tag}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
