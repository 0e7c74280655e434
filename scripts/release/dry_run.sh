#!/usr/bin/env bash
# What release.yml does on a tag, for every distribution at once, without the upload:
#
#     bash scripts/release/dry_run.sh [DIR]      # DIR: dist/ by default
#
# Each package built alone without workspace sources (scripts/build_dists.sh), then each wheel
# smoke-tested in a fresh venv outside the checkout (smoke_test.py), its profwin siblings taken from
# DIR as they will be from the index once released. ci.yml runs it on every change.
set -euo pipefail
out="${1:-dist}"
cd "$(dirname "$0")/../.."
bash scripts/build_dists.sh "$out"
export PIP_FIND_LINKS="$out"
for folder in packages/*/; do
    python3 scripts/release/smoke_test.py "$out" "$(basename "$folder")"
done
echo "release dry run: every distribution built and smoke-tested" >&2
