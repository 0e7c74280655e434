"""The trainer integrations profwin ships keep one floor plan (docs/trainers.md, "One floor plan"),
as test_backend_layout.py holds the backends to theirs.

Read from the source files and the packages' pyproject.toml: every trainer distribution has the
same modules, each holding what the plan says (``_plugin.PLUGIN`` with the supported releases as
data in ``requires``, the settings type in ``settings.py``, core's ``TrainerIntegration`` and its
verb pair in ``seam.py``), the trainer's own modules have names no sibling uses for something
else, imports between a package's modules run one way, and no version range, version constant or
output folder is written anywhere but where the plan puts it. Then, imported: the verb pair's one
policy holds in each (never raise, one warning, run unprofiled). And the lists that were hand-kept:
profwin's own distributions (``discovery.own_distribution``), the published plugins' install hints
(``discovery._PUBLISHED``) and docs/releasing.md's list follow the workspace.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy brings tomli on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"


def _project(folder: Path) -> dict[str, Any]:
    return dict(tomllib.loads((folder / "pyproject.toml").read_text())["project"])


PROJECTS = {folder.name: _project(folder) for folder in sorted(PACKAGES.iterdir()) if (folder / "pyproject.toml").exists()}
TRAINERS = {name: project for name, project in PROJECTS.items() if "profwin.trainers" in project.get("entry-points", {})}
"""The trainer distributions: every package that registers a ``profwin.trainers`` entry point."""

SHARED = ("_plugin", "settings", "seam", "__init__")
"""Every trainer package's modules: the entry point, the settings type, the seam with the verb pair."""
OWN = {
    "profwin-verl": ("traces", "sglang_stop", "builders", "autopatch"),
    "profwin-openrlhf": ("actor", "train_ppo_ray"),
    "profwin-slime": (),
    "profwin-trl": (),
}
"""What a trainer needs beyond the plan, each named after what it is in that trainer: verl's trace
relocation (``traces``: where the files land, as in the backends), its SGLang stop and builders
and its ``VERL_USE_EXTERNAL_MODULES`` module; OpenRLHF's engine actor and launcher."""
RANK = {
    "_plugin": 0,
    "settings": 1,
    "traces": 1,
    "sglang_stop": 1,
    "builders": 2,
    "actor": 2,
    "seam": 3,
    "autopatch": 4,
    "train_ppo_ray": 4,
    "__init__": 5,
}
"""A module imports only modules of a lower rank."""
NO_ENGINE_EXTRA = {
    "profwin-slime": "slime is not on the registry (installed from its repository; the 'slime' on PyPI is another project)",
    "profwin-openrlhf": "OpenRLHF's wheel pins a training stack (transformers==5.15.0) that verl's excludes: one lock cannot hold both",
}
"""Trainers whose supported releases cannot be an ``engine`` extra, and why."""


def _import_name(distribution: str) -> str:
    return distribution.replace("-", "_")


def _source(package: str, module: str) -> Path:
    return PACKAGES / package / "src" / _import_name(package) / f"{module}.py"


def _tree(package: str, module: str) -> ast.Module:
    path = _source(package, module)
    return ast.parse(path.read_text(), filename=str(path))


def _modules(package: str) -> list[str]:
    return sorted(p.stem for p in (PACKAGES / package / "src" / _import_name(package)).glob("*.py"))


def _assigned(tree: ast.Module, name: str) -> ast.expr:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Name) and target.id == name and node.value is not None:
                return node.value
            if isinstance(target, ast.Tuple) and name in [getattr(e, "id", None) for e in target.elts]:
                return node.value  # type: ignore[return-value]
    raise AssertionError(f"no module-level {name}")


def _plugin(package: str) -> dict[str, Any]:
    call = _assigned(_tree(package, "_plugin"), "PLUGIN")
    assert isinstance(call, ast.Call), ast.dump(call)
    assert getattr(call.func, "id", None) == "PluginSpec", ast.dump(call)
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}


def test_the_trainer_wing_is_the_four_trainers() -> None:
    assert sorted(TRAINERS) == sorted(OWN) == ["profwin-openrlhf", "profwin-slime", "profwin-trl", "profwin-verl"]


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_every_trainer_has_the_same_modules_and_names_mean_one_thing(package: str) -> None:
    found = _modules(package)
    assert [m for m in SHARED if m not in found] == []
    assert [m for m in found if m not in (*SHARED, *OWN[package])] == [], "a new module: give it a place in OWN, RANK and docs"
    others = {m for other, names in OWN.items() if other != package for m in names}
    assert set(OWN[package]) & others == set(), "one name, two meanings"
    assert "rollout" not in found  # it was verl's trace relocation and slime's rollout function


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_the_entry_point_declares_the_supported_releases_as_data(package: str) -> None:
    trainer = package.removeprefix("profwin-")
    assert TRAINERS[package]["entry-points"]["profwin.trainers"] == {trainer: f"{_import_name(package)}._plugin:PLUGIN"}
    plugin = _plugin(package)
    assert (plugin["name"], plugin["kind"], plugin["target"]) == (trainer, "trainer", f"{_import_name(package)}.seam:INTEGRATION")
    (requirement,) = (Requirement(r) for r in plugin["requires"])
    assert requirement.name == trainer
    assert requirement.specifier, "a range of releases, not just a name"
    assert not re.search(r"\d+\.\d+", plugin.get("install_hint", "")), "the versions are requires's to say, once"


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_the_engine_extra_is_the_same_range(package: str) -> None:
    """One source for each range: the pyproject's ``engine`` extra, where there is one, says what
    ``PLUGIN.requires`` says."""
    extras = TRAINERS[package].get("optional-dependencies", {})
    if package in NO_ENGINE_EXTRA:
        assert "engine" not in extras
        return
    assert [str(Requirement(r)) for r in extras["engine"]] == [str(Requirement(r)) for r in _plugin(package)["requires"]]


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_the_seam_holds_one_integration_and_the_verb_pair(package: str) -> None:
    tree = _tree(package, "seam")
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name.endswith("Integration")]
    assert len(classes) == 1
    base = classes[0].bases[0]
    assert isinstance(base, ast.Subscript)
    assert getattr(base.value, "id", None) == "TrainerIntegration"
    assert ast.unparse(_assigned(tree, "INTEGRATION")) == f"{classes[0].name}(PLUGIN)"
    assert ast.unparse(_assigned(tree, "enable")) == "(INTEGRATION.enable, INTEGRATION.disable, INTEGRATION.records)"
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert not {"enable", "disable", "records", "patch", "unpatch"} & defined, "the verb pair and records() are core's"


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_the_settings_type_is_one_class_through_the_one_converter(package: str) -> None:
    tree = _tree(package, "settings")
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name.endswith("Profiling")]
    assert len(classes) == 1
    (settings,) = classes
    decorators = [ast.unparse(d) for d in settings.decorator_list]
    assert decorators == ["frozen(kw_only=True)"]
    methods = {node.name for node in settings.body if isinstance(node, ast.FunctionDef)}
    assert not {"to_json", "from_json", "to_dict", "from_dict"} & methods or package == "profwin-verl"
    if package == "profwin-verl":  # verl's own config carries its settings: read with verl's meaning, never given to enable
        assert "settings_type" not in ast.unparse(_tree(package, "seam"))
    else:
        assert [ast.unparse(b) for b in settings.bases] == ["RolloutSettings"]
        assert f"settings_type = {settings.name}" in ast.unparse(_tree(package, "seam"))


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_the_root_exports_the_plan(package: str) -> None:
    exported = ast.literal_eval(_assigned(_tree(package, "__init__"), "__all__"))
    settings = next(
        n.name for n in _tree(package, "settings").body if isinstance(n, ast.ClassDef) and n.name.endswith("Profiling")
    )
    assert {"INTEGRATION", "enable", "disable", "records", settings} <= set(exported)


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_imports_between_a_trainers_modules_run_down(package: str) -> None:
    own = _import_name(package)
    upward = []
    for module in _modules(package):
        for node in ast.walk(_tree(package, module)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(own):
                targets = [node.module.split(".")[1]] if "." in node.module else [a.name for a in node.names]
                upward += [f"{module}.py:{node.lineno} imports {t}" for t in targets if t in RANK and RANK[t] >= RANK[module]]
    assert upward == []


# Written once each: the range in _plugin.py, the default folder in core (verl keeps verl's own).
_ELSEWHERE = re.compile(r"SUPPORTED_[A-Z]+|[A-Z]+_COMMIT|/tmp/profwin-rollouts|profwin-traces|[a-z]+>=\d")


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_no_version_or_folder_is_written_twice(package: str) -> None:
    found = [
        f"{module}.py: {match.group()}"
        for module in _modules(package)
        if module != "_plugin"
        for match in _ELSEWHERE.finditer(_source(package, module).read_text())
    ]
    assert found == []


# -- the policy, the same in every trainer ---------------------------------------------------------


SLIME_LOADS_IT = {"profwin-slime"}
"""No seam to look for: slime loads profwin-slime's rollout function itself (``--rollout-function-path``)."""


def _trainer_site(tmp_path: Path, trainer: str, version: str) -> Path:
    """A trainer's metadata at ``version`` (its code absent: the version rule reads metadata only)."""
    info = tmp_path / f"{trainer}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {trainer}\nVersion: {version}\n")
    return tmp_path


def _said(call: Any) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [f"{w.category.__name__}: {w.message}" for w in caught]


@pytest.mark.parametrize("package", sorted(TRAINERS))
def test_enable_never_raises_warns_once_and_leaves_the_trainer_alone(
    package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = importlib.import_module(_import_name(package))
    integration = root.INTEGRATION
    trainer = package.removeprefix("profwin-")
    (requirement,) = integration.plugin.requires
    left = f"RuntimeWarning: {package} left {integration.trainer} {integration.unprofiled}: "
    settings = None if integration.settings_type is None else {"rollouts": 1, "spec": "2:6"}
    # Other tests of this process may have profiled rollouts, or left the integration enabled
    # (slime's rollout function enables it at its first call): start from a fresh process's state.
    recorded = list(root.records())
    root.disable()
    integration.enabled = None
    # Not installed (the dev environment has no trainer).
    assert importlib.util.find_spec(trainer) is None
    assert _said(lambda: root.enable(settings)) == (
        [], [f"{left}{integration.trainer} is not installed in this environment ({package} supports {requirement})"]
    )  # fmt: skip
    # A release outside the range, and the same with force: past the version rule to the seams.
    below = "0.0.1"
    monkeypatch.syspath_prepend(str(_trainer_site(tmp_path, trainer, below)))
    assert _said(lambda: root.enable(settings)) == (
        [], [f"{left}{package} supports {requirement}, and {integration.trainer} is {below}: its seams may differ "
             "(enable(force=True) tries anyway)"]
    )  # fmt: skip
    result, said = _said(lambda: root.enable(settings, force=True))
    if package in SLIME_LOADS_IT:
        assert (result, said) == ([f"{_import_name(package)}.seam.generate_rollout"], [])
        assert root.disable() == result
    else:
        assert result == []
        (refusal,) = said
        assert refusal.startswith(left), refusal
        assert "cannot be imported" in refusal, refusal
    # Settings that cannot be read, where a trainer takes settings.
    if settings is not None:
        result, said = _said(lambda: root.enable({"rollouts": "1-3", "spec": "2:6"}))
        assert (result, said) == ([], [f"{left}settings.rollouts: must be rollout ids like '3,7', a first id and a count "
                                       "like '3+4', or every N like '%10' or '5%10' (got '1-3')"])  # fmt: skip
    assert _said(root.disable) == ([], [])
    assert _said(root.records) == (recorded, [])  # nothing profiled here
    assert integration.enabled is False
    integration.enabled = None  # as a fresh process finds it


# -- lists that were hand-kept ------------------------------------------------------------------


def test_profwins_own_distributions_are_the_workspaces_by_rule() -> None:
    from profwin.discovery import own_distribution

    core_author = PROJECTS["profwin-core"]["authors"][0]["name"]
    for name, project in PROJECTS.items():
        assert project["name"] == name
        assert own_distribution(name, project["authors"][0]["name"]), name
        assert project["authors"][0]["name"] == core_author
    assert not own_distribution("profwin-contrib-x", "someone else")
    assert not own_distribution("vllm", core_author)
    assert own_distribution("Profwin_VLLM")  # as PyPI normalizes names


def test_the_install_hints_name_the_published_plugins() -> None:
    from profwin.discovery import _PUBLISHED

    umbrella = PROJECTS["profwin"]["optional-dependencies"]
    published = {
        plugin: name.removeprefix("profwin-")
        for name, project in PROJECTS.items()
        if name != "profwin-core"
        for group in ("profwin.backends", "profwin.profilers")
        for plugin in project.get("entry-points", {}).get(group, {})
    }
    assert published == _PUBLISHED
    assert all(f"profwin-{extra}>=0.1" in umbrella[extra] for extra in published.values())


def test_releasing_lists_every_distribution() -> None:
    found = re.search(r"Each distribution(.*?)has its own version", (ROOT / "docs" / "releasing.md").read_text(), re.S)
    assert found is not None
    assert sorted(set(re.findall(r"`(profwin(?:-[a-z]+)?)`", found.group(1)))) == sorted(PROJECTS)


def test_every_plugin_entry_point_is_a_plugin_spec_in_its_plugin_module() -> None:
    """Backends, profilers, trainers and clusters alike: ``<package>._plugin:PLUGIN`` (core's own
    drivers in their modules), so the ray plugin is no instance any more."""
    for name, project in PROJECTS.items():
        for group in ("profwin.backends", "profwin.profilers", "profwin.trainers", "profwin.clusters"):
            for target in project.get("entry-points", {}).get(group, {}).values():
                assert target.endswith(":PLUGIN"), (name, group, target)
                if name != "profwin-core":
                    assert target == f"{_import_name(name)}._plugin:PLUGIN", (name, target)
