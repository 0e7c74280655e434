#!/usr/bin/env bash
# Build the verl 0.9.1 environment from nothing, once, in profwin's cache:
#   ~/.cache/profwin/venvs/verl-<version>/   (printed on stdout when ready)
# The verl tests import verl's real config module, dataclasses, YAML files and builders with this
# environment's python and put profwin on PYTHONPATH from the checkout, so nothing of profwin is
# installed here (the cache outlives checkouts).
#
# verl's wheel declares a training stack (ray[default], vllm-free but wandb, datasets, peft, ...);
# `import verl.utils.profiler.config` runs verl/__init__.py, which needs only numpy, ray,
# tensordict, transformers, codetiming, orjson, omegaconf and packaging. So verl goes in --no-deps
# beside those, and torch is pinned to the local CPU build: tensordict would otherwise pull a 5 GB
# CUDA torch (shared/reference/verl.md, appendix).
set -euo pipefail
source "$(dirname "$0")/../cached_venv.sh"

version="${1:-0.9.1}"
build() {
    # --compile-bytecode (in pinned_torch_install): these machines set PYTHONDONTWRITEBYTECODE;
    # without .pyc files importing transformers and ray takes far longer.
    pinned_torch_install "$1" torch==2.13.0+cpu numpy ray tensordict transformers codetiming orjson omegaconf packaging pyyaml
    uv pip install --quiet -p "$1" --compile-bytecode --no-deps "verl==$version" >&2
    "$1" -c "
import verl, torch
from verl.utils.profiler.config import build_vllm_profiler_args
print('verl', verl.__version__, 'torch', torch.__version__)
" >&2
}

cached_venv "verl-$version" build
