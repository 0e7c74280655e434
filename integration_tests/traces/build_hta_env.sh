#!/usr/bin/env bash
# Build the environments of Holistic Trace Analysis that profwin's device times are checked against,
# once each, in profwin's cache (the last one's path is printed when ready):
#   ~/.cache/profwin/venvs/traceinsight-0.6.1/   (HTA as published since 2026: `traceinsight`)
#   ~/.cache/profwin/venvs/hta-0.5.0/            (the last `HolisticTraceAnalysis` release)
# `build_hta_env.sh traceinsight-0.6.1` builds one. Both import as `hta` (pandas, numpy, plotly;
# no torch), so each has its own environment; neither enters profwin's.
set -euo pipefail
source "$(dirname "$0")/../cached_venv.sh"

declare -A REQUIREMENT=(
    [traceinsight-0.6.1]="traceinsight==0.6.1"
    [hta-0.5.0]="HolisticTraceAnalysis==0.5.0"
)

for name in "${@:-hta-0.5.0 traceinsight-0.6.1}"; do
    for one in $name; do
        [[ -n "${REQUIREMENT[$one]:-}" ]] || { echo "unknown HTA environment: $one" >&2; exit 2; }
        requirement="${REQUIREMENT[$one]}"
        build() {
            uv pip install --quiet -p "$1" "$requirement" >&2
            "$1" -c "import hta.trace_analysis, hta.version; print('hta', hta.version.__version_tuple__)" >&2
        }
        cached_venv "$one" build
    done
done
