"""The declared plugin API: plugins import ``profwin.plugin`` (the contracts) and its toolkits,
and nothing else of core."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import profwin.plugin

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "packages/profwin-core/src/profwin"
SURFACES = ("profwin.plugin", *(f"profwin.plugin.{m.name}" for m in pkgutil.iter_modules(profwin.plugin.__path__)))


def _profwin_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = {
        n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "profwin"
    }
    found |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names if a.name.split(".")[0] == "profwin"}
    return found


def test_plugins_import_only_the_plugin_api() -> None:
    sources = [
        p for pkg in (ROOT / "packages").glob("profwin-*/src") if pkg.parent.name != "profwin-core" for p in pkg.rglob("*.py")
    ]
    assert len(sources) > 20
    offenders = {str(p.relative_to(ROOT)): sorted(m) for p in sources if (m := _profwin_imports(p) - set(SURFACES))}
    assert offenders == {}


def test_lint_bans_every_other_core_module() -> None:
    section = (ROOT / "pyproject.toml").read_text().split("[tool.ruff.lint.flake8-tidy-imports.banned-api]")[1].split("\n[")[0]
    banned = set(re.findall(r'^"(profwin\.[a-z_]+)"\.msg', section, flags=re.M))
    modules = {f"profwin.{p.stem}" for p in CORE.glob("*.py") if p.stem not in ("__init__", "__main__", "plugin")}
    modules |= {f"profwin.{p.name}" for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists() and p.name != "plugin"}
    assert banned == modules


def test_everything_exported_is_importable() -> None:
    for surface in SURFACES:
        module = importlib.import_module(surface)
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == [], surface
    assert profwin.plugin.PLUGIN_API == 2


def test_the_contracts_are_few_and_each_name_has_one_home() -> None:
    """The root holds what a plugin implements or calls to be one (at most 50 names); what one
    kind of plugin needs lives in its toolkit, and no name is exported twice. Each surface lists
    its names once, as its imports (``__all__`` is derived from them)."""
    assert len(SURFACES) == 6  # the contracts and five toolkits
    assert len(profwin.plugin.__all__) <= 50
    homes: dict[str, list[str]] = {}
    for surface in SURFACES:
        module = importlib.import_module(surface)
        tree = ast.parse(Path(module.__file__ or "").read_text())
        imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
        assert set(module.__all__) == imported, surface
        for name in module.__all__:
            homes.setdefault(name, []).append(surface)
    assert {name: where for name, where in homes.items() if len(where) > 1} == {}
