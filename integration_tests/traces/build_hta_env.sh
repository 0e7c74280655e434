#!/usr/bin/env bash
# Build HolisticTraceAnalysis 0.5.0's environment once, in profwin's cache (printed when ready):
#   ~/.cache/profwin/venvs/hta-0.5.0/
# HTA (pandas, numpy, plotly; no torch) is the reference profwin's device times are checked
# against; it never enters profwin's own environment.
set -euo pipefail
export UV_NO_CONFIG=1 UV_PYTHON_DOWNLOADS=never
cache="${PROFWIN_CACHE:-$HOME/.cache/profwin}"
venv="$cache/venvs/hta-0.5.0"
if [[ -f "$venv/.profwin-ready" ]]; then
    echo "$venv"
    exit 0
fi
mkdir -p "$cache/venvs"
exec 9>"$venv.lock"
flock 9
if [[ ! -f "$venv/.profwin-ready" ]]; then
    rm -rf "$venv"
    uv venv --quiet "$venv" >&2
    uv pip install --quiet --python "$venv/bin/python" "HolisticTraceAnalysis==0.5.0" >&2
    "$venv/bin/python" -c "import hta.trace_analysis" >&2
    touch "$venv/.profwin-ready"
fi
echo "$venv"
