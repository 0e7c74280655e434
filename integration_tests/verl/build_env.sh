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
# The workspace pyproject hides torch from uv (override-dependencies); this environment needs it,
# so no project configuration may apply here.
export UV_NO_CONFIG=1 UV_PYTHON_DOWNLOADS=never

version="${1:-0.9.1}"
cache="${PROFWIN_CACHE:-$HOME/.cache/profwin}"
venv="$cache/venvs/verl-$version"
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

# torch==2.13.0+cpu is not on PyPI: pip's configured find-links has it, and uv does not read pip's
# configuration, so hand it over explicitly.
find_links="${PIP_FIND_LINKS:-$(pip config get global.find-links 2>/dev/null || true)}"
if [[ -z "$find_links" ]]; then
    echo "build_env.sh: no find-links for torch==2.13.0+cpu (set PIP_FIND_LINKS or pip's global.find-links)" >&2
    exit 2
fi

staging="$venv.building.$$"
rm -rf "$staging"
constraint="$(mktemp)"
trap 'rm -rf "$staging" "$constraint"' EXIT
echo "torch==2.13.0+cpu" >"$constraint"
start=$(date +%s)
# --relocatable: built under a staging name and renamed when complete, so a killed build never
# leaves a half environment under the final name.
uv venv --quiet --relocatable -p 3.11 "$staging" >&2
# --compile-bytecode: these machines set PYTHONDONTWRITEBYTECODE; without .pyc files importing
# transformers and ray takes far longer.
uv pip install --quiet -p "$staging/bin/python" --compile-bytecode --find-links "$find_links" -c "$constraint" \
    torch==2.13.0+cpu numpy ray tensordict transformers codetiming orjson omegaconf packaging pyyaml >&2
uv pip install --quiet -p "$staging/bin/python" --compile-bytecode --no-deps "verl==$version" >&2
"$staging/bin/python" -c "
import verl, torch
from verl.utils.profiler.config import build_vllm_profiler_args
print('verl', verl.__version__, 'torch', torch.__version__)
" >&2
rm -rf "$venv"
mv "$staging" "$venv"
trap 'rm -f "$constraint"' EXIT
echo "built in $(($(date +%s) - start)) s" >&2
date -u +%FT%TZ >"$ready"
echo "$venv"
