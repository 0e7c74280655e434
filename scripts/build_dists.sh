#!/usr/bin/env bash
# Build every distribution of this repository, profwin-ray included, into one folder:
#
#     bash scripts/build_dists.sh [DIR]          # DIR: dist/ by default, relative to where you are
#
# Until profwin is on the package index, this is how it is installed: copy DIR where it is needed
# and `pip install --find-links DIR "profwin[vllm]"` (any extra): pip takes profwin's
# distributions from DIR and everything else (attrs, packaging, ...) from the index. Each package
# is built alone as a release builds it (`uv build --no-sources`: an sdist, then the wheel from
# it), four at a time. integration_tests/test_wheels.py builds with this script and installs every
# extra the docs name into a fresh venv.
set -euo pipefail
out="${1:-dist}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || { echo "build_dists: needs uv (pip install uv)" >&2; exit 2; }
printf '%s\n' packages/*/pyproject.toml | xargs -n 1 dirname |
    xargs -P 4 -I {} uv build --quiet {} --no-sources --out-dir "$out"
echo "built $(ls "$out"/*.whl | wc -l) wheels into $out; install with: pip install --find-links $out \"profwin[EXTRAS]\"" >&2
