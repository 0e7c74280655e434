#!/usr/bin/env bash
# Build the cached Ray 2.60.0 environment the profwin-ray tests run their local cluster in.
#
#   integration_tests/ray/build_env.sh        (prints the venv: ~/.cache/profwin/venvs/ray-2.60.0)
#
# ray and the local CPU torch build (torch stands in for each node's engine); profwin itself is
# never installed here: the tests put this checkout's src folders on PYTHONPATH. Kept out of the
# workspace's dev environment on purpose: ray is heavy and only profwin-ray needs it.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../cached_venv.sh"

build() {
    local python=$1 links
    links="$(torch_find_links)"
    uv pip install --quiet -p "$python" --find-links "$links" torch==2.13.0+cpu "ray==2.60.0" attrs packaging
    "$python" -c "import ray, torch; print('ray', ray.__version__, 'torch', torch.__version__)" >&2
}

cached_venv ray-2.60.0 build
