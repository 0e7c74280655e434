"""The cached engine environments (``cached_venv.sh``): every build resolves PyPI as it was at one
fixed moment, and an environment is built again when its recipe changes. A cold build in CI took
transformers 5.25 (out on 2026-12-02) into verl's environment, with a new dependency that broke
SGLang 0.5.12 beside it, while the warm caches still held the old resolution. Real bash and uv."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent

BUILD = """#!/usr/bin/env bash
set -euo pipefail
source {helper}
build() {{ echo "$UV_EXCLUDE_NEWER" >"$(dirname "$1")/../resolved-at"; }}
cached_venv toy build
"""


def _build(script: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROFWIN_CACHE": str(cache)}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=300, check=True)


def test_every_build_script_goes_through_the_cached_venv_helper() -> None:
    scripts = sorted(HERE.glob("*/build*env*.sh"))
    assert len(scripts) >= 9
    assert [s.relative_to(HERE) for s in scripts if "cached_venv.sh" not in s.read_text()] == []


def test_a_build_is_pinned_to_one_moment_and_redone_when_its_recipe_changes(tmp_path: Path) -> None:
    script = tmp_path / "build_env.sh"
    script.write_text(BUILD.format(helper=HERE / "cached_venv.sh"))
    cache = tmp_path / "cache"
    first = _build(script, cache)
    venv = Path(first.stdout.strip())
    assert venv == cache / "venvs" / "toy"
    assert "toy built in" in first.stderr
    assert (venv / "resolved-at").read_text().strip() == "2026-12-01T00:00:00Z"
    stamp = (venv / ".profwin-ready").read_text().splitlines()
    assert len(stamp) == 2  # when, and the recipe

    again = _build(script, cache)
    assert "built in" not in again.stderr  # ready and of this recipe: reused
    assert (venv / ".profwin-ready").read_text().splitlines() == stamp

    script.write_text(script.read_text() + "# another recipe\n")
    changed = _build(script, cache)
    assert "toy built in" in changed.stderr  # a stale environment is never reused
    assert (venv / ".profwin-ready").read_text().splitlines()[1] != stamp[1]

    (venv / ".profwin-ready").write_text("2026-11-01T00:00:00Z\n")  # a stamp of the old layout: date only
    assert "toy built in" in _build(script, cache).stderr
