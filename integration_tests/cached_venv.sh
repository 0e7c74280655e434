# Sourced by the engine build scripts (vllm/, verl/, traces/build_*env.sh): one place for profwin's
# cache layout, the build lock, the staging build and the ready stamp.
#
#   cached_venv NAME BUILD     # prints the venv's path; BUILD PYTHON installs into the fresh venv
#
# ~/.cache/profwin/venvs/NAME (or $PROFWIN_CACHE/venvs/NAME) is built once and reused while its
# stamp names this recipe (below). Several test sessions may ask at once: one builds, the others
# wait on the lock. The venv is built under a staging name (--relocatable) and renamed when
# complete, so a killed build never leaves a half environment under the final name.
#
# A build resolves what PyPI held at one moment (UV_EXCLUDE_NEWER), so a cold build today gives the
# environment a cold build gave when the moment was set: an unpinned dependency drifted otherwise
# (transformers 5.25, out on 2026-12-02, brought `kernels` into verl's environment, and SGLang
# 0.5.12's transformers 5.6 failed importing it beside verl). The stamp holds the recipe (this file
# and the build script), and an environment built from another recipe is built again.

# The workspace pyproject hides torch from uv (override-dependencies); these environments may need
# it, so no project configuration may apply here.
export UV_NO_CONFIG=1 UV_PYTHON_DOWNLOADS=never
# Move it forward on purpose (and run the suite), never by accident.
export UV_EXCLUDE_NEWER=2026-12-01T00:00:00Z

# This file and the build script that sourced it: what an environment was built from.
_recipe() {
    cat "${BASH_SOURCE[0]}" "$0" | sha256sum | cut -c1-16
}

# Whether NAME's environment is ready and built from this recipe.
_ready() {
    [[ -f "$1/.profwin-ready" && "$(sed -n 2p "$1/.profwin-ready")" == "$(_recipe)" ]]
}

cached_venv() {
    local name=$1 build=$2
    local cache="${PROFWIN_CACHE:-$HOME/.cache/profwin}"
    local venv="$cache/venvs/$name"
    if ! _ready "$venv"; then
        mkdir -p "$cache/venvs"
        exec 9>"$venv.lock"
        flock 9
        if ! _ready "$venv"; then
            local staging="$venv.building.$$" start
            start=$(date +%s)
            rm -rf "$staging"
            trap "rm -rf '$staging'" EXIT
            uv venv --quiet --relocatable -p 3.11 "$staging" >&2
            "$build" "$staging/bin/python"
            rm -rf "$venv"
            mv "$staging" "$venv"
            trap - EXIT
            echo "$name built in $(($(date +%s) - start)) s" >&2
            printf '%s\n%s\n' "$(date -u +%FT%TZ)" "$(_recipe)" >"$venv/.profwin-ready"
        fi
        exec 9>&-
    fi
    echo "$venv"
}

# pip's configured find-links, where these machines keep torch==2.13.0+cpu (not on PyPI); uv does
# not read pip's configuration, so the scripts hand it over explicitly.
torch_find_links() {
    local found="${PIP_FIND_LINKS:-$(pip config get global.find-links 2>/dev/null || true)}"
    if [[ -z "$found" ]]; then
        echo "no find-links for torch==2.13.0+cpu (set PIP_FIND_LINKS or pip's global.find-links)" >&2
        return 2
    fi
    echo "$found"
}

# Install packages into the environment of python $1 with torch pinned to the local CPU build
# (2.13.0+cpu, from pip's find-links): what pulls torch in must not replace it with a CUDA wheel.
pinned_torch_install() {
    local python=$1 find_links constraint status=0
    shift
    find_links="$(torch_find_links)" || return
    constraint="$(mktemp)"
    echo "torch==2.13.0+cpu" >"$constraint"
    uv pip install --quiet -p "$python" --compile-bytecode --find-links "$find_links" -c "$constraint" "$@" >&2 || status=$?
    rm -f "$constraint"
    return "$status"
}
