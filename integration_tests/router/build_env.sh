#!/usr/bin/env bash
# Build a cached environment holding one router from the registry, for profwin's router tests.
#
#   integration_tests/router/build_env.sh sglang-router==0.3.2    (prints the venv's path)
#   integration_tests/router/build_env.sh                         (every router in routers.txt)
#
# Each router version gets its own venv (~/.cache/profwin/venvs/<name>-<version>): nothing else is
# installed in it, the tests run its binary in front of real engine servers.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../cached_venv.sh"

build() {
    uv pip install --quiet -p "$1" "$REQUIREMENT"
}

# scripts/build_envs.sh calls every build script without arguments: then build each router the
# tests use (routers.txt, one requirement a line), one after the other (each is one small wheel).
if [[ $# -eq 0 ]]; then
    while read -r REQUIREMENT; do
        [[ -n "$REQUIREMENT" ]] && cached_venv "${REQUIREMENT/==/-}" build
    done <"$HERE/routers.txt"
    exit 0
fi
REQUIREMENT=$1
cached_venv "${REQUIREMENT/==/-}" build
