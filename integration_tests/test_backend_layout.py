"""The backends profwin ships keep one layout (docs/plugins.md, "One layout for every backend").

Read from the source files, nothing imported: every backend has the same modules, each holds what
the table says (``backend.py`` the Backend class only, ``plan_for`` in ``plan.py``, ``options_of``
in ``options.py``), and imports between a backend's modules run one way, down the table below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[1] / "packages"
BACKENDS = {"profwin-vllm": "profwin_vllm", "profwin-sglang": "profwin_sglang"}

RANK = {
    "_plugin": 0,
    "server_plugin": 0,
    "options": 1,
    "versions": 1,
    "traces": 1,
    "structs": 1,
    "folders": 1,
    "window": 2,
    "engine_plugin": 2,
    "plan": 3,
    "targets": 4,
    "backend": 5,
    "session": 6,
    "__init__": 7,
}
"""A module imports only modules of a lower rank. ``server_plugin``, ``structs`` and ``window`` are
SGLang's own, ``engine_plugin`` and ``folders`` vLLM's (the engine-side halves run inside the engine)."""
SHARED = ("_plugin", "backend", "targets", "options", "plan", "versions", "traces", "session", "__init__")


def _tree(package: str, module: str) -> ast.Module:
    path = PACKAGES / package / "src" / BACKENDS[package] / f"{module}.py"
    return ast.parse(path.read_text(), filename=str(path))


def _modules(package: str) -> list[str]:
    return sorted(p.stem for p in (PACKAGES / package / "src" / BACKENDS[package]).glob("*.py"))


def _defined(tree: ast.Module) -> list[str]:
    return [node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize("package", BACKENDS)
def test_every_backend_has_the_same_modules(package: str) -> None:
    found = _modules(package)
    assert [m for m in SHARED if m not in found] == []
    assert [m for m in found if m not in RANK] == [], "a new module: give it a place in RANK and in docs/plugins.md"


@pytest.mark.parametrize("package", BACKENDS)
def test_each_module_holds_its_part(package: str) -> None:
    backend = _defined(_tree(package, "backend"))
    assert len(backend) == 1
    assert backend[0].endswith("Backend")
    assert "plan_for" in _defined(_tree(package, "plan"))
    assert "options_of" in _defined(_tree(package, "options"))


@pytest.mark.parametrize("package", BACKENDS)
def test_imports_between_a_backends_modules_run_down(package: str) -> None:
    own = BACKENDS[package]
    upward = []
    for module in _modules(package):
        for node in ast.walk(_tree(package, module)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{own}."):
                target = node.module.split(".")[1]
                if RANK[target] >= RANK[module]:
                    upward.append(f"{module}.py:{node.lineno} imports {target}")
    assert upward == []
