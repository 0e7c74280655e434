"""The distributions as users get them: every package built alone, installed by pip in fresh venvs.

Nothing here uses the workspace's editable installs. Each package is built with
``uv build --package NAME --no-sources`` (sdist, then the wheel from the sdist), and pip installs
the wheels into venvs made outside the checkout, so a missing file, a wrong dependency or an
import of a sibling that the package does not declare fails here even though the dev venv hides
it.

No venv gets torch: every engine, torch included, is an extra, and ``profwin[all]`` must stay
light. Should something pull torch anyway, it is pinned to the build the dev venv runs (which
the machine's find-links hold), so pip never downloads a multi-GB CUDA build before the test
fails.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import built_python, workspace_members

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy brings tomli on 3.10
    import tomli as tomllib

pytestmark = [pytest.mark.wheels, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = workspace_members()
# Outside the uv workspace: profwin-ray, a path source (uv would sync its ray into the dev env).
OUTSIDE = {p.parent.name: p.parent for p in sorted(ROOT.glob("packages/*/pyproject.toml")) if p.parent.name not in MEMBERS}
# Every distribution, as release.yml builds them (by folder).
PACKAGES = {
    name: tomllib.loads((path / "pyproject.toml").read_text())["project"] for name, path in {**MEMBERS, **OUTSIDE}.items()
}
UMBRELLA = "profwin"
CORE = "profwin-core"
TRACES = "profwin-traces"  # the trace toolkit: the umbrella's by default, and what plugins that read traces depend on
RAY = "profwin-ray"
PLUGINS = sorted(name for name in MEMBERS if name not in (UMBRELLA, CORE))  # the light ones, in profwin[all]
ENGINE_DISTS = {"vllm", "sglang", "torch-npu"}
# What `profwin plugins` lists.
LISTED_GROUPS = ("profwin.backends", "profwin.profilers", "profwin.trainers", "profwin.clusters", "profwin.commands")
# Trainer integrations no "engine" extra can name: slime is not on the registry (it is installed
# from its repository; the "slime" on PyPI is another project), and OpenRLHF's wheel pins a training
# stack (transformers==5.15.0) that verl's excludes, so one workspace lock cannot hold both extras.
NO_ENGINE_EXTRA = {"profwin-slime", "profwin-openrlhf"}
# The cached Ray environment's ray (integration_tests/ray/build_env.sh), so uv's cache holds it.
RAY_VERSION = "2.60.0"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _import_name(dist: str) -> str:
    return _norm(dist).replace("-", "_")


def _requirement_name(req: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    assert match, req
    return _norm(match.group(1))


def _with_requirements(*names: str) -> set[str]:
    """``names`` and the profwin distributions they require, as pip installs them (no extras)."""
    found, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo += [r for r in map(_requirement_name, PACKAGES[name].get("dependencies", [])) if r.startswith("profwin")]
    return found


# -- building ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every package built on its own, the way release.yml builds one, by the one command the docs
    give for it (scripts/build_dists.sh: every distribution, profwin-ray included, into one folder)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "build_dists.sh"), str(out)], capture_output=True, text=True)
    assert done.returncode == 0, f"scripts/build_dists.sh failed:\n{done.stdout}\n{done.stderr}"
    built = {p.name for p in out.iterdir()}
    assert len([n for n in built if n.endswith(".whl")]) == len(PACKAGES), sorted(built)
    return out


def _artifacts(dist: Path, name: str) -> tuple[Path, Path]:
    version = PACKAGES[name]["version"]
    stem = f"{_import_name(name)}-{version}"
    wheel, sdist = dist / f"{stem}-py3-none-any.whl", dist / f"{stem}.tar.gz"
    assert wheel.is_file(), f"no wheel {wheel.name} in {sorted(p.name for p in dist.iterdir())}"
    assert sdist.is_file(), f"no sdist {sdist.name} in {sorted(p.name for p in dist.iterdir())}"
    return wheel, sdist


def _wheel_metadata(wheel: Path) -> tuple[email.message.Message, list[str], str]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(meta_name).decode())
        eps_name = next((n for n in names if n.endswith(".dist-info/entry_points.txt")), None)
        entry_points = zf.read(eps_name).decode() if eps_name else ""
    return meta, names, entry_points


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_package_builds_alone_with_its_metadata(dist: Path, name: str) -> None:
    project = PACKAGES[name]
    wheel, sdist = _artifacts(dist, name)
    meta, files, entry_points = _wheel_metadata(wheel)

    assert meta["Name"] == name
    assert meta["Version"] == project["version"]
    assert meta["Requires-Python"] == project["requires-python"]
    assert meta["License-Expression"] == project["license"]
    assert any(".dist-info/licenses/LICENSE" in f for f in files), f"{wheel.name} ships no LICENSE"
    assert str(meta.get_payload()).strip(), f"{wheel.name} has no long description (readme)"
    assert meta["Description-Content-Type"] == "text/markdown"

    requires = meta.get_all("Requires-Dist") or []
    hard = [r for r in requires if "extra ==" not in r]
    # A trainer that pins its engine must be able to install profwin next to it.
    assert not {_requirement_name(r) for r in hard} & ENGINE_DISTS, hard
    # ray is profwin-ray's own dependency and nobody else's (profwin[ray] goes through profwin-ray).
    assert ("ray" in {_requirement_name(r) for r in requires}) == (name == RAY), requires
    for req in hard:
        if _requirement_name(req).startswith("profwin"):
            assert "==" not in req, f"{name}: {req!r} pins a sibling; use a compatible range"
            assert "<" in req, f"{name}: {req!r} needs an upper bound (the next minor while on 0.x)"

    code = sorted({f.split("/")[0] for f in files if not f.split("/")[0].endswith(".dist-info")})
    if name == UMBRELLA:
        assert code == [], f"the umbrella must ship no code, has {code}"
        assert sorted(_requirement_name(r) for r in hard) == [CORE, TRACES], hard  # `profwin summarize` by default
        extras = set(meta.get_all("Provides-Extra") or [])
        assert extras == {"vllm", "sglang", "npu", "memory", "verl", "slime", "openrlhf", "trl", "ray", "plot", "fast", "all"}
        for extra in ("vllm", "sglang", "npu", "memory", "verl", "slime", "openrlhf", "trl", "ray"):
            assert any(r.startswith(f"profwin-{extra}") and f"extra == '{extra}'" in r for r in requires), extra
    else:
        assert code == [_import_name(name) if name != CORE else "profwin"]
        assert f"{code[0]}/py.typed" in files
        for group, eps in project.get("entry-points", {}).items():
            for ep_name, target in eps.items():
                assert f"{ep_name} = {target}" in entry_points, f"{name}: entry point {group}:{ep_name} missing"
    if name in PLUGINS:
        assert any(_requirement_name(r) == CORE for r in hard), f"{name} must require {CORE}"
        if name in NO_ENGINE_EXTRA or name == TRACES:  # the toolkit drives no engine: it reads files
            assert "engine" not in (meta.get_all("Provides-Extra") or []), f"{name}: its trainer is not on the registry"
        else:
            assert "engine" in (meta.get_all("Provides-Extra") or []), f"{name}: the engine must be the extra 'engine'"
    if name == RAY:  # no engine extra: ray is what it is for
        assert sorted(_requirement_name(r) for r in hard) == [CORE, TRACES, "ray"], hard

    with tarfile.open(sdist) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    for needed in ("pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE"):
        assert needed in members, f"{sdist.name} lacks {needed}"
    tests_dir = ROOT / "packages" / name / "tests"
    if any(tests_dir.glob("test_*.py")):
        assert any(m.startswith("tests/test_") for m in members), f"{sdist.name} lacks its tests"


# -- fresh venvs -------------------------------------------------------------------------------


def _pip() -> list[str]:
    """A pip that can install into another interpreter (``--python``, pip >= 22.3)."""
    for python in (getattr(sys, "_base_executable", ""), shutil.which("python3") or ""):
        if python and subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
            return [python, "-m", "pip"]
    pytest.fail("no pip next to this interpreter or python3: cannot install wheels into a fresh venv")


def _configured_find_links() -> list[str]:
    """The machine's find-links (where a CPU torch lies); --find-links on the command line replaces them."""
    value = (
        os.environ.get("PIP_FIND_LINKS")
        or subprocess.run([*_pip(), "config", "get", "global.find-links"], capture_output=True, text=True).stdout
    )
    return value.split()


def _torch_pin() -> str | None:
    """The CPU torch to install: the dev venv's, else a wheel in a local find-links folder."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pass
    for link in _configured_find_links():
        folder = Path(link.removeprefix("file://"))
        if "://" in str(folder) or not folder.is_dir():
            continue  # a URL: nothing to look into from here
        for wheel in sorted(folder.glob("torch-*.whl")):
            return wheel.name.split("-")[1]
    return None


class Venv:
    """A venv outside the checkout, filled by pip from the built wheels."""

    def __init__(self, path: Path, dist: Path) -> None:
        self.path, self.dist = path, dist
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
        self.python = path / "bin" / "python"
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        self.env["PATH"] = f"{path / 'bin'}{os.pathsep}{self.env['PATH']}"
        self.constraints = path / "constraints.txt"
        # Pin torch to a CPU build we know is at hand: otherwise pip picks the newest CUDA build
        # from the index (GBs of nvidia-* wheels).
        pin = _torch_pin()
        self.constraints.write_text(f"torch=={pin}\n" if pin else "")

    def install(self, *requirements: str, uv: bool = False) -> None:
        """pip, as users install; ``uv``: uv's pip, which links what uv's cache holds (ray's
        wheel is hundreds of MB unpacked: the cached Ray environment's build put it there)."""
        links = [arg for link in (str(self.dist), *_configured_find_links()) for arg in ("--find-links", link)]
        if uv:
            installer = ["uv", "pip", "install", "--quiet", "--python", str(self.python)]
            env = {**self.env, "UV_NO_CONFIG": "1"}
        else:
            installer = [
                *_pip(),
                "--python",
                str(self.python),
                "install",
                "--quiet",
                "--no-compile",
                "--disable-pip-version-check",
            ]
            env = self.env
        result = subprocess.run(
            [*installer, *links, "--constraint", str(self.constraints), *requirements],
            capture_output=True, text=True, env=env, cwd=self.path,
        )  # fmt: skip
        assert result.returncode == 0, f"pip install {' '.join(requirements)} failed:\n{result.stdout}\n{result.stderr}"

    def run(self, *args: str) -> str:
        # cwd is the venv, never the checkout, so nothing imports from the source tree.
        result = subprocess.run(list(args), capture_output=True, text=True, env=self.env, cwd=self.path)
        assert result.returncode == 0, f"{' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def plugins(self) -> dict[str, dict[str, Any]]:
        listed = json.loads(self.run(str(self.path / "bin" / "profwin"), "plugins", "--json"))
        assert isinstance(listed, list)
        by_name = {p["name"]: p for p in listed}
        assert len(by_name) == len(listed), f"a plugin is listed twice: {listed}"
        return by_name

    def distributions(self) -> dict[str, str]:
        out = self.run(str(self.python), "-I", "-c", _LIST_DISTS)
        return {_norm(name): version for name, version in json.loads(out).items()}

    def import_report(self, dist_name: str) -> dict[str, Any]:
        return dict(json.loads(self.run(str(self.python), "-I", "-c", _IMPORT_ALL, dist_name)))


_LIST_DISTS = """
import importlib.metadata as md, json
print(json.dumps({d.metadata["Name"]: d.version for d in md.distributions()}))
"""

# Imports every module of one distribution's import package and reports each failure, plus what
# its entry points declare as run-time requirements (PluginSpec.requires).
_IMPORT_ALL = """
import importlib, importlib.metadata as md, json, pkgutil, sys
dist = md.distribution(sys.argv[1])
top = sorted({f.parts[0] for f in dist.files if f.suffix == ".py" and ".dist-info" not in f.parts[0]})[0]
failures, requires = {}, []
def record(name, exc):
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
    failures[name] = {"missing": missing and missing.split(".")[0], "error": f"{type(exc).__name__}: {exc}"}
names, package = [top], None
try:
    package = importlib.import_module(top)
    walked = pkgutil.walk_packages(package.__path__, top + ".", onerror=lambda n: None)
    # __main__ runs a CLI, autopatch patches verl (what importing it is for): neither is a library module.
    names += [m.name for m in walked if not m.name.endswith((".__main__", ".autopatch"))]
except Exception as exc:
    record(top, exc)
for name in names[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        record(name, exc)
for ep in dist.entry_points:
    if ep.group in ("profwin.backends", "profwin.profilers", "profwin.trainers", "profwin.clusters"):
        requires += list(getattr(ep.load(), "requires", ()))
print(json.dumps({"top": top, "file": getattr(package, "__file__", None),
                  "modules": names, "failures": failures, "requires": requires}))
"""


def _declared_plugins(*dists: str) -> dict[str, str]:
    """Plugin name -> distribution, from the ``profwin.*`` entry points in the packages' pyproject.toml."""
    return {
        ep: dist
        for dist in dists
        for group, eps in PACKAGES[dist].get("entry-points", {}).items()
        if group in LISTED_GROUPS
        for ep in eps
    }


def _assert_listed(plugins: dict[str, dict[str, Any]], expected: dict[str, str], versions: dict[str, str]) -> None:
    """``plugins --json`` lists exactly ``expected`` (plugin name -> distribution), each usable or
    only missing its engine, with the version of the distribution that registered it."""
    assert set(plugins) == set(expected), f"listed {sorted(plugins)}, expected {sorted(expected)}"
    for name, distribution in expected.items():
        info = plugins[name]
        assert set(info) == {"name", "group", "distribution", "version", "status", "detail", "summary"}, info
        assert info["distribution"] == distribution, info
        assert info["version"] == versions[distribution] == PACKAGES[distribution]["version"], info
        assert info["status"] in ("ok", "missing dependency"), info
        assert info["group"] in LISTED_GROUPS, info


def _assert_no_undeclared_imports(venv: Venv, name: str) -> dict[str, Any]:
    report = venv.import_report(name)
    assert report["file"], report
    assert report["file"].startswith(str(venv.path)), report
    project = PACKAGES[name]
    extras = {_import_name(_requirement_name(r)) for reqs in project.get("optional-dependencies", {}).values() for r in reqs}
    # What the plugin may lack here: its optional engine and what its PluginSpec declares it
    # needs at run time (core reports those as "missing dependency"); never a sibling plugin,
    # never anything else.
    allowed = extras | {_import_name(_requirement_name(r)) for r in report["requires"]}
    siblings = {_import_name(p) for p in PLUGINS if p != name}
    for module, failure in report["failures"].items():
        missing = failure["missing"]
        assert missing not in siblings, f"{module} imports the sibling {missing}, which {name} does not declare"
        assert missing in allowed, f"{module} failed with only {name}'s own dependencies: {failure['error']}"
    assert len(report["modules"]) - len(report["failures"]) >= 1
    return report


@pytest.fixture(scope="module")
def extras_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    venv = Venv(tmp_path_factory.mktemp("venv-extras") / "venv", dist)
    venv.install(f"profwin[vllm,npu]=={PACKAGES[UMBRELLA]['version']}")
    return venv


def test_umbrella_extras_install_only_their_plugins(extras_venv: Venv) -> None:
    versions = extras_venv.distributions()
    assert {d for d in versions if d.startswith("profwin")} == {UMBRELLA, CORE, TRACES, "profwin-vllm", "profwin-npu"}
    assert not set(versions) & (ENGINE_DISTS | {"torch"}), "an engine was installed without its extra"
    code = "import profwin; print(profwin.__file__, profwin.__version__)"
    path, version = extras_venv.run(str(extras_venv.python), "-I", "-c", code).split()
    assert path.startswith(str(extras_venv.path)), path
    assert version == PACKAGES[CORE]["version"]

    plugins = extras_venv.plugins()
    expected = _declared_plugins(CORE, TRACES, "profwin-vllm", "profwin-npu")
    assert {"vllm", "npu", "torch"} <= set(expected)
    _assert_listed(plugins, expected, versions)
    assert "sglang" not in plugins
    assert "memory" not in plugins
    # No torch in this venv: core's own driver reports what to install instead of failing.
    assert plugins["torch"]["status"] == "missing dependency", plugins["torch"]


class Alone:
    """One plugin installed by itself in a fresh venv, inspected before anything else is added."""

    def __init__(self, venv: Venv, name: str) -> None:
        self.venv, self.name = venv, name
        venv.install(f"{name}=={PACKAGES[name]['version']}")
        self.versions = venv.distributions()
        self.plugins = venv.plugins()
        self.report = _assert_no_undeclared_imports(venv, name)


@pytest.fixture(scope="module")
def alone(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Alone]:
    """Each plugin's own venv, made once: the profwin[all] test reuses profwin-memory's."""
    made: dict[str, Alone] = {}

    def get(name: str) -> Alone:
        if name not in made:
            made[name] = Alone(Venv(tmp_path_factory.mktemp(f"venv-{name}") / "venv", dist), name)
        return made[name]

    return get


@pytest.mark.parametrize("name", PLUGINS)
def test_plugin_alone_needs_no_undeclared_sibling(alone: Callable[[str], Alone], name: str) -> None:
    case = alone(name)
    installed = {d for d in case.versions if d.startswith("profwin")}
    assert installed == _with_requirements(name), f"installing {name} alone brought {sorted(installed)}"
    _assert_listed(case.plugins, _declared_plugins(*sorted(installed)), case.versions)
    assert case.report["modules"], case.report


def test_the_trace_commands_come_with_profwin_traces(
    alone: Callable[[str], Alone], dist: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``profwin summarize`` runs where profwin-traces is installed (its entry point joins core's
    command line); where only profwin-core is, it says on one line what to install (exit 2)."""
    trace = tmp_path_factory.mktemp("trace") / "t.json"
    events = [{"ph": "X", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": 10.0 * k, "dur": 5.0} for k in range(3)]
    trace.write_text(json.dumps({"traceEvents": events}))
    toolkit = alone(TRACES).venv
    summary = json.loads(toolkit.run(str(toolkit.path / "bin" / "profwin"), "summarize", str(trace), "--json"))
    assert [step["number"] for step in summary["steps"]] == [0, 1, 2]
    core = Venv(tmp_path_factory.mktemp("venv-core") / "venv", dist)
    core.install(f"{CORE}=={PACKAGES[CORE]['version']}")
    done = subprocess.run(
        [str(core.path / "bin" / "profwin"), "summarize", str(trace)], capture_output=True, text=True, env=core.env, cwd=core.path
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "profwin: error: 'profwin summarize' comes with profwin-traces, which is not installed: "
        'pip install --find-links dist/ "profwin-traces" (the umbrella "profwin" includes it; dist/: bash scripts/build_dists.sh dist/)\n'
    )


def test_the_compiled_scanner_builds_from_the_installed_wheel(alone: Callable[[str], Alone], tmp_path: Path) -> None:
    """profwin-traces' wheel is pure Python and holds the scanner's C source, which the installed
    package builds on first use (profwin_traces.native) into the user's cache, not into the venv."""
    toolkit = alone(TRACES).venv
    wheel, _ = _artifacts(toolkit.dist, TRACES)
    assert "profwin_traces/_scan.c" in _wheel_metadata(wheel)[1]
    code = "from profwin_traces.native import compiled, native_status; print(native_status()); print(compiled().Scanner().kinds)"
    toolkit.env["XDG_CACHE_HOME"] = str(tmp_path)
    try:
        status, kinds = toolkit.run(str(toolkit.path / "bin" / "python"), "-c", code).splitlines()
    finally:
        del toolkit.env["XDG_CACHE_HOME"]
    assert status.startswith(f"on ({tmp_path / 'profwin' / 'native'}/_scan-"), status
    assert kinds == "0"


def test_all_extra_installs_every_plugin(alone: Callable[[str], Alone]) -> None:
    venv = alone("profwin-memory").venv
    venv.install(f"profwin[all]=={PACKAGES[UMBRELLA]['version']}")
    versions = venv.distributions()
    assert not set(versions) & (ENGINE_DISTS | {"torch"}), "profwin[all] installed an engine: it must stay light"
    plugins = venv.plugins()
    _assert_listed(plugins, _declared_plugins(CORE, *PLUGINS), versions)
    assert {"vllm", "sglang", "npu", "memory", "torch"} <= set(plugins)
    for name in ("torch", "memory"):
        assert plugins[name]["status"] == "missing dependency", plugins[name]
    assert "profwin-verl" in versions  # profwin[all] brings verl's integration (not verl)
    assert "profwin-slime" in versions  # and slime's (slime is the user's, from its repository)
    assert {"profwin-openrlhf", "profwin-trl"} <= set(versions)  # and OpenRLHF's and TRL's
    assert "profwin-ray" not in versions  # profwin[openrlhf] brings it; profwin[all] stays without ray
    for trainer in ("verl", "slime", "openrlhf", "trl"):  # listed; the trainer itself is the user's
        info = plugins[trainer]
        assert (info["group"], info["status"]) == ("profwin.trainers", "missing dependency"), info


# -- profwin-verl next to the real verl ---------------------------------------------------------

VERL_BUILD = ROOT / "integration_tests" / "verl" / "build_env.sh"
VERL_VERSION = "0.9.1"

# A verl rollout block as verl's trainer YAML writes it, interpolations included: only OmegaConf
# (profwin-verl's dependency) resolves them.
_VERL_YAML = """
global_profiler: {tool: torch, steps: [2], save_path: prof}
actor_rollout_ref:
  rollout:
    profiler:
      tool: ${oc.select:global_profiler.tool,null}
      enable: true
      save_path: ${oc.select:global_profiler.save_path,null}
      tool_config:
        torch: {contents: [cpu], discrete: true, profile_token_start: 20, profile_token_end: 80}
"""

_READ_VERL = """
import importlib.metadata as md, importlib.util, json, sys
import profwin
(ep,) = md.entry_points(group="profwin.spec_formats", name="verl")
spec = profwin.load_spec(sys.argv[1], at="actor_rollout_ref.rollout.profiler")
print(json.dumps({"entry_point": ep.value, "dist": ep.dist.name, "window": str(spec.window),
                  "output_dir": spec.output_dir.name, "core_verl": importlib.util.find_spec("profwin.verl") is not None}))
"""

_AUTOPATCHED = "import verl.utils.profiler as p, profwin_verl as w; print(all(getattr(p, n) is getattr(w, n) for n in w.NAMES))"


@pytest.fixture(scope="module")
def verl_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv that sees the real verl 0.9.1 (the cached verl environment's site-packages,
    through a .pth file: verl and its torch are far too big to install per test run), with
    profwin-verl and profwin-core installed by pip from their wheels."""
    verl_python = built_python(VERL_BUILD, VERL_VERSION, label=f"verl {VERL_VERSION}")
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    verl_site = subprocess.run([str(verl_python), "-I", "-c", purelib], capture_output=True, text=True, check=True).stdout.strip()
    venv = Venv(tmp_path_factory.mktemp("venv-verl") / "venv", dist)
    (Path(venv.run(str(venv.python), "-I", "-c", purelib).strip()) / "verl_env.pth").write_text(verl_site + "\n")
    venv.install(f"profwin-verl=={PACKAGES['profwin-verl']['version']}")
    return venv


def test_profwin_verl_from_its_wheel_is_found_through_its_entry_point_next_to_verl(verl_venv: Venv) -> None:
    versions = verl_venv.distributions()
    assert versions["verl"] == VERL_VERSION
    assert {d for d in versions if d.startswith("profwin")} == {CORE, TRACES, "profwin-verl"}
    report = verl_venv.import_report("profwin-verl")
    assert report["top"] == "profwin_verl"
    assert report["file"].startswith(str(verl_venv.path)), report
    assert report["failures"] == {}, report

    yaml_file = verl_venv.path / "trainer.yaml"
    yaml_file.write_text(_VERL_YAML)
    read = json.loads(verl_venv.run(str(verl_venv.python), "-I", "-c", _READ_VERL, str(yaml_file)))
    assert read["entry_point"] == "profwin_verl.settings:spec_format"
    assert read["dist"] == "profwin-verl"
    assert (read["window"], read["output_dir"]) == ("20:80 tokens", "prof")
    assert read["core_verl"] is False  # core imports no distribution above it: verl's path is profwin_verl only

    # The one-line adoption: verl imports the module itself.
    env = {**verl_venv.env, "VERL_USE_EXTERNAL_MODULES": "profwin_verl.autopatch"}
    done = subprocess.run(
        [str(verl_venv.python), "-c", _AUTOPATCHED], capture_output=True, text=True, env=env, cwd=verl_venv.path
    )
    assert done.stdout.strip() == "True", f"{done.stdout}\n{done.stderr[-3000:]}"


# -- profwin-ray and ray -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """profwin-ray alone from its wheel, with the real ray (uv links it from its cache: no download
    once the cached Ray environment was built, and ray is installed once for both tests below)."""
    # Waits for the cached Ray environment's build (scripts/test.sh starts it in the background):
    # its `uv pip install ray` is what put ray in uv's cache.
    built_python(ROOT / "integration_tests" / "ray" / "build_env.sh", label=f"Ray {RAY_VERSION}")
    venv = Venv(tmp_path_factory.mktemp("venv-ray") / "venv", dist)
    with venv.constraints.open("a") as f:
        f.write(f"ray=={RAY_VERSION}\n")
    venv.install(f"{RAY}=={PACKAGES[RAY]['version']}", uv=True)
    return venv


def test_profwin_ray_from_its_wheel_is_found_through_its_entry_point(ray_venv: Venv) -> None:
    versions = ray_venv.distributions()
    assert {d for d in versions if d.startswith("profwin")} == {CORE, TRACES, RAY}
    assert versions["ray"] == RAY_VERSION
    assert "torch" not in versions
    plugins = ray_venv.plugins()
    _assert_listed(plugins, _declared_plugins(CORE, TRACES, RAY), versions)
    assert (plugins["ray"]["group"], plugins["ray"]["status"]) == ("profwin.clusters", "ok"), plugins["ray"]
    report = _assert_no_undeclared_imports(ray_venv, RAY)
    assert report["failures"] == {}, report
    code = "import ray; from profwin.plugin import cluster; c = cluster('ray'); print(type(c).__module__, ray.__version__)"
    assert ray_venv.run(str(ray_venv.python), "-I", "-c", code).split() == ["profwin_ray", RAY_VERSION]


def test_the_umbrellas_ray_extra_is_profwin_ray(ray_venv: Venv) -> None:
    """``profwin[ray]`` by pip into the venv above: it resolves to the profwin-ray there (and so to
    ray), installs no other plugin, and ray stays the one installed."""
    ray_venv.install(f"profwin[ray]=={PACKAGES[UMBRELLA]['version']}")
    versions = ray_venv.distributions()
    assert {d for d in versions if d.startswith("profwin")} == {UMBRELLA, CORE, TRACES, RAY}
    assert versions["ray"] == RAY_VERSION
    assert ray_venv.plugins()["ray"]["status"] == "ok"


# -- what the docs tell users to type ------------------------------------------------------------

# The one install line of the docs (integration_tests/test_docs.py holds every page to it).
DOC_INSTALL = re.compile(r'pip install --find-links dist/ "profwin\[([a-z,]+)\]"')


def documented_extras() -> list[str]:
    """Every ``profwin[...]`` the README and docs/ tell users to install, as written."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return sorted({m.group(1) for page in pages for m in DOC_INSTALL.finditer(page.read_text())})


def _closure(extras: str) -> set[str]:
    """The profwin distributions ``profwin[extras]`` installs (from the built metadata)."""
    wanted, todo = {UMBRELLA} | _with_requirements(UMBRELLA), [(UMBRELLA, e) for e in extras.split(",")]
    while todo:
        name, extra = todo.pop()
        for req in PACKAGES[name].get("optional-dependencies", {}).get(extra, []):
            dep = _requirement_name(req)
            inner = re.search(r"\[([a-z,]+)\]", req)
            if dep == UMBRELLA and inner:
                todo += [(UMBRELLA, e) for e in inner.group(1).split(",")]
            elif dep.startswith("profwin") and dep not in wanted:
                wanted.add(dep)
                todo += [(dep, "")]
        wanted |= _with_requirements(name)
    return wanted


def test_the_docs_name_extras() -> None:
    assert {"vllm", "all"} <= set(documented_extras()), documented_extras()


@pytest.mark.parametrize("extras", documented_extras())
def test_each_documented_install_line_works_in_a_fresh_venv(extras: str, dist: Path, tmp_path: Path) -> None:
    """``pip install --find-links dist/ "profwin[EXTRAS]"`` as the docs write it, after
    scripts/build_dists.sh, in a fresh venv: it installs, brings the distributions the extras
    name, and ``profwin plugins`` lists their plugins."""
    venv = Venv(tmp_path / "venv", dist)
    expected = _closure(extras)
    needs_ray = RAY in expected
    if needs_ray:  # ray's wheel is hundreds of MB: uv links it from the cache the Ray environment's build filled
        built_python(ROOT / "integration_tests" / "ray" / "build_env.sh", label=f"Ray {RAY_VERSION}")
        with venv.constraints.open("a") as f:
            f.write(f"ray=={RAY_VERSION}\n")
    venv.install(f"profwin[{extras}]", uv=needs_ray)
    versions = venv.distributions()
    assert {d for d in versions if d.startswith("profwin")} == expected, extras
    plugins = venv.plugins()
    _assert_listed(plugins, _declared_plugins(*sorted(expected - {UMBRELLA})), versions)


# -- the release rule, tried: a core minor bump and the plugins' pinned ranges ---------------------


@pytest.fixture(scope="module")
def bumped_core(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """profwin-core built as its next minor release would be (its version alone bumped, in a copy)."""
    from packaging.version import Version

    current = Version(PACKAGES[CORE]["version"])
    bumped = f"{current.major}.{current.minor + 1}.0"
    copy = tmp_path_factory.mktemp("core-bumped") / "profwin-core"
    shutil.copytree(MEMBERS[CORE], copy, ignore=shutil.ignore_patterns("__pycache__", "tests"))
    pyproject = copy / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(f'version = "{current}"', f'version = "{bumped}"', 1))
    out = tmp_path_factory.mktemp("core-bumped-dist")
    done = subprocess.run(
        ["uv", "build", str(copy), "--wheel", "--no-sources", "--out-dir", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return bumped, out


def test_a_core_minor_bump_needs_a_release_of_each_plugin_whose_range_excludes_it(
    dist: Path, bumped_core: tuple[str, Path], tmp_path: Path
) -> None:
    """docs/releasing.md's rule, tried with pip: each plugin wheel as built now, installed beside
    profwin-core's next minor release. Where the plugin's ``profwin-core`` range excludes it (every
    plugin pins ``>=0.1,<0.2``), pip must refuse the pair, so the plugin needs a release that widens
    its range (scripts/release/bump.py lists them); where the range admits it, pip must install it.
    The table printed is what the rules say must happen on that release."""
    from packaging.requirements import Requirement

    version, bumped = bumped_core
    # A dry run into an empty --target: never the interpreter's own environment, which a system
    # Python refuses to install into at all (PEP 668, "externally-managed-environment").
    target = tmp_path / "target"
    rows = []
    for name, meta in sorted(PACKAGES.items()):
        core_reqs = [Requirement(r) for r in meta.get("dependencies", []) if _requirement_name(r) == CORE]
        if name == CORE or not core_reqs:
            continue
        admits = all(r.specifier.contains(version, prereleases=True) for r in core_reqs)
        done = subprocess.run(
            [*_pip(), "install", "--dry-run", "--ignore-installed", "--quiet", "--target", str(target), "--find-links", str(bumped),
             "--find-links", str(dist), f"{name}=={meta['version']}", f"{CORE}=={version}"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        installs = done.returncode == 0
        if not installs:
            assert "ResolutionImpossible" in done.stderr or "conflict" in done.stderr.lower(), done.stderr[-2000:]
        rows.append((name, str(core_reqs[0].specifier), admits, installs))
    print(f"\nprofwin-core {version} beside each plugin as built now:")
    for name, spec, admits, installs in rows:
        verdict = "installs" if installs else "refused by pip"
        print(
            f"  {name:18} profwin-core{spec:12} {verdict:15} -> {'no release needed' if admits else 'release with a widened range'}"
        )
    assert rows, "no plugin depends on profwin-core"
    assert [(name, installs) for name, _, admits, installs in rows] == [(name, admits) for name, _, admits, _ in rows]
