#!/usr/bin/env bash
# Build HolisticTraceAnalysis 0.5.0's environment once, in profwin's cache (printed when ready):
#   ~/.cache/profwin/venvs/hta-0.5.0/
# HTA (pandas, numpy, plotly; no torch) is the reference profwin's device times are checked
# against; it never enters profwin's own environment.
set -euo pipefail
source "$(dirname "$0")/../cached_venv.sh"

build() {
    uv pip install --quiet -p "$1" "HolisticTraceAnalysis==0.5.0" >&2
    "$1" -c "import hta.trace_analysis" >&2
}

cached_venv hta-0.5.0 build
