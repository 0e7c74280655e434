#!/usr/bin/env bash
# Build a cached environment holding one router from the registry, for profwin's router tests.
#
#   integration_tests/router/build_env.sh sglang-router==0.3.2    (prints the venv's path)
#
# Each router version gets its own venv (~/.cache/profwin/venvs/<name>-<version>): nothing else is
# installed in it, the tests run its binary in front of real engine servers.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../cached_venv.sh"
REQUIREMENT=${1:?usage: build_env.sh NAME==VERSION}

build() {
    uv pip install --quiet -p "$1" "$REQUIREMENT"
}

cached_venv "${REQUIREMENT/==/-}" build
