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
# The cp311 manylinux wheel: the Python sources are the same in every build of one version.
# pip is not always there (a uv venv has none, and under `uv run` its python3 comes first on
# PATH): use the first python3 that has pip, else download from PyPI's JSON API with the stdlib.
pip_python=""
for candidate in python3 /usr/bin/python3 /usr/local/bin/python3; do
    if "$candidate" -m pip --version >/dev/null 2>&1; then
        pip_python="$candidate"
        break
    fi
done
if [[ -n "$pip_python" ]]; then
    find_links="${PIP_FIND_LINKS:-$("$pip_python" -m pip config get global.find-links 2>/dev/null || true)}"
    "$pip_python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux_2_28_x86_64 ${find_links:+--find-links "$find_links"} \
        -d "$staging/wheel" "torch-npu==$version" >&2
else
    python3 - "$version" "$staging/wheel" <<'PY' >&2
import hashlib, json, pathlib, sys, urllib.parse, urllib.request
version, dest = sys.argv[1], pathlib.Path(sys.argv[2])
index = "https://pypi.org/pypi/torch-npu/json"
with urllib.request.urlopen(index, timeout=60) as reply:
    files = json.load(reply)["releases"][version]
wheel = next(f for f in files if f["filename"].endswith(".whl") and "cp311" in f["filename"] and "x86_64" in f["filename"])
with urllib.request.urlopen(urllib.parse.urljoin(index, wheel["url"]), timeout=600) as reply:  # mirrors answer relative URLs
    data = reply.read()
if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
    sys.exit(f"{wheel['filename']}: sha256 does not match PyPI's")
(dest / wheel["filename"]).write_bytes(data)
print(f"downloaded {wheel['filename']} with urllib (no pip here)")
PY
fi
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
