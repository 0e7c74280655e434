#!/usr/bin/env bash
# Set up the development environment: the locked uv workspace in .venv, plus a CPU build of torch.
#
# uv never resolves torch in this workspace (see `override-dependencies` in pyproject.toml): PyPI
# only has multi-GB CUDA builds. We install a CPU build next to the locked packages instead:
# from pip's configured find-links when the machine has one (these build machines ship
# torch 2.13.0+cpu there), else from the PyTorch CPU index. PROFWIN_TORCH overrides the requirement.
# --no-config: the workspace's own override (which hides torch from uv) must not apply here.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet uv
# --inexact keeps the CPU torch installed below (uv itself never installs torch here).
uv sync --locked --inexact --quiet

if .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    exit 0
fi
find_links="${PIP_FIND_LINKS:-$(python3 -m pip config get global.find-links 2>/dev/null || true)}"
# The find-links folder holds a build for one Python (3.11 on the build machines): on another Python
# (the 3.10 floor, say) that install fails, and the PyTorch CPU index is asked instead.
if [ -n "$find_links" ] && {
    echo "bootstrap: installing ${PROFWIN_TORCH:-torch==2.13.0+cpu} from $find_links" >&2
    uv pip install --quiet --no-config --python .venv/bin/python --find-links "$find_links" "${PROFWIN_TORCH:-torch==2.13.0+cpu}" numpy
}; then
    :
else
    echo "bootstrap: installing ${PROFWIN_TORCH:-torch} from the PyTorch CPU index" >&2
    uv pip install --quiet --no-config --python .venv/bin/python --index-url https://download.pytorch.org/whl/cpu \
        --extra-index-url https://pypi.org/simple "${PROFWIN_TORCH:-torch}" numpy
fi
.venv/bin/python -c "import torch" || { echo "bootstrap: torch is still not importable in .venv" >&2; exit 1; }
