#!/usr/bin/env bash
# Build every engine environment the integration tests use (integration_tests/*/build*env*.sh:
# vLLM, SGLang 0.5.23 and 0.5.12, verl, HTA, and any later one named that way), all at once, each in the background.
#
#   scripts/build_envs.sh [LOG_DIR]
#
# scripts/test.sh starts this before lint and type checks, so on a cold cache the environments
# build while those run, and concurrently rather than one after the other as the test fixtures
# would ask for them. Each script builds through integration_tests/cached_venv.sh, whose lock
# makes a fixture that asks for an environment still building wait for it instead of building it
# twice; a ready environment is a no-op. A failed build is reported here and again, as a test
# failure, by the fixture that needs it. Exit status: 0 when every build succeeded, else 1.
set -uo pipefail
cd "$(dirname "$0")/.."

logs="${1:-$(mktemp -d)}"
mkdir -p "$logs"
start=$(date +%s)
pids=()
scripts=()
for script in integration_tests/*/build*env*.sh; do
    log="$logs/$(echo "${script#integration_tests/}" | tr / -).log"
    bash "$script" >"$log" 2>&1 &
    pids+=("$!")
    scripts+=("$script")
done
rc=0
for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
        echo "== ready after $(($(date +%s) - start)) s: ${scripts[$i]}" >&2
    else
        echo "== FAILED after $(($(date +%s) - start)) s: ${scripts[$i]} (log: $logs)" >&2
        rc=1
    fi
done
echo "== engine environments: $(($(date +%s) - start)) s in all" >&2
exit "$rc"
