"""Check a release tag ``NAME==VERSION`` against the workspace; print what release.yml needs.

    python scripts/release/check_tag.py profwin-vllm==0.2.0 >> "$GITHUB_OUTPUT"

Prints ``package=``, ``version=`` and ``directory=`` lines. Fails (exit 1, reason on stderr) when
the tag is malformed, names no distribution of the workspace, differs from
``uv version --package NAME --short`` (``--project DIR`` for a package outside the workspace,
profwin-ray), or the package's CHANGELOG.md has no section for it. release.yml builds
``directory``, which works for both.
"""

from __future__ import annotations

import re
import sys

from _workspace import ROOT, changelog_section, current_version, project

TAG = re.compile(r"^(?P<name>[a-z0-9][a-z0-9-]*)==(?P<version>[0-9][0-9A-Za-z.+!-]*)$")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tag = sys.argv[1]
    match = TAG.match(tag)
    if match is None:
        print(f"tag {tag!r} is not NAME==VERSION (e.g. profwin-vllm==0.2.0)", file=sys.stderr)
        return 1
    name, version = match["name"], match["version"]
    directory, _ = project(name)
    current = current_version(name)
    if current != version:
        print(f"tag {tag} does not match {name}'s version {current} in {directory}/pyproject.toml", file=sys.stderr)
        return 1
    if not changelog_section((directory / "CHANGELOG.md").read_text(), version):
        print(f"{directory}/CHANGELOG.md has no section '## {version}': bump with scripts/release/bump.py", file=sys.stderr)
        return 1
    print(f"package={name}")
    print(f"version={version}")
    print(f"directory={directory.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
