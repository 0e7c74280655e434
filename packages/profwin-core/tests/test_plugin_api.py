"""The declared plugin API: plugins import ``profwin.plugin`` and nothing else of core."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import profwin.plugin

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "packages/profwin-core/src/profwin"


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
    offenders = {str(p.relative_to(ROOT)): sorted(m) for p in sources if (m := _profwin_imports(p) - {"profwin.plugin"})}
    assert offenders == {}


def test_lint_bans_every_other_core_module() -> None:
    section = (ROOT / "pyproject.toml").read_text().split("[tool.ruff.lint.flake8-tidy-imports.banned-api]")[1].split("\n[")[0]
    banned = set(re.findall(r'^"(profwin\.[a-z_]+)"\.msg', section, flags=re.M))
    modules = {f"profwin.{p.stem}" for p in CORE.glob("*.py") if p.stem not in ("__init__", "__main__", "plugin")}
    modules |= {f"profwin.{p.name}" for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert banned == modules


def test_everything_exported_is_importable() -> None:
    missing = [name for name in profwin.plugin.__all__ if not hasattr(profwin.plugin, name)]
    assert missing == []
    assert profwin.plugin.PLUGIN_API == 2
