"""Print one release's notes: the section of a package's CHANGELOG.md for a version.

    python scripts/release/notes.py profwin-vllm 0.2.0 > notes.md

release.yml uses it for the GitHub release. Exits 1 if the CHANGELOG has no such section.
"""

from __future__ import annotations

import argparse
import sys

from _workspace import changelog_section, project


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="distribution name, e.g. profwin-vllm")
    parser.add_argument("version", help="released version, e.g. 0.2.0")
    args = parser.parse_args()
    directory, _ = project(args.package)
    changelog = directory / "CHANGELOG.md"
    section = changelog_section(changelog.read_text(), args.version)
    if not section:
        print(f"{changelog} has no non-empty section '## {args.version}'", file=sys.stderr)
        return 1
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
