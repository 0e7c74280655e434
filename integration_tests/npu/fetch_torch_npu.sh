#!/usr/bin/env bash
# Fetch torch_npu's *Python sources* (not an installation) into profwin's cache, once per version:
#   ~/.cache/profwin/torch_npu-src-<version>/torch_npu/...   (the folder is printed on stdout)
# torch_npu cannot be installed on a machine without the Ascend CANN toolkit (it makes
# `import torch` fail), so the wheel is downloaded and only its .py files are unpacked, without
# its dist-info: torch never sees it, nothing is installed anywhere. torch_npu_pyonly.py then
# loads torch_npu's real profiler code behind a stand-in for its C extension. See
# docs/backends/npu.md ("What is verified where").
set -euo pipefail

version="${1:-2.13.0}"
cache="${PROFWIN_CACHE:-$HOME/.cache/profwin}"
dest="$cache/torch_npu-src-$version"
ready="$dest/.profwin-ready"

if [[ -f "$ready" ]]; then
    echo "$dest"
    exit 0
fi
mkdir -p "$cache"
exec 9>"$dest.lock"
flock 9
if [[ -f "$ready" ]]; then
    echo "$dest"
    exit 0
fi

staging="$dest.fetching.$$"
rm -rf "$staging"
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/wheel"
find_links="${PIP_FIND_LINKS:-$(pip config get global.find-links 2>/dev/null || true)}"
# The cp311 manylinux wheel: the Python sources are the same in every build of one version.
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux_2_28_x86_64 ${find_links:+--find-links "$find_links"} \
    -d "$staging/wheel" "torch-npu==$version" >&2
python3 - "$staging" <<'PY'
import pathlib, sys, zipfile
staging = pathlib.Path(sys.argv[1])
(wheel,) = (staging / "wheel").glob("torch_npu-*.whl")
with zipfile.ZipFile(wheel) as zf:
    for name in zf.namelist():
        if name.startswith("torch_npu/") and name.endswith(".py"):
            zf.extract(name, staging)
PY
rm -rf "$staging/wheel" "$dest"
mv "$staging" "$dest"
trap - EXIT
date -u +%FT%TZ >"$ready"
echo "$dest"
