"""Core's layers, enforced: no import runs back up a layer and no imports close a circle.

The layers (docs/architecture.md explains each) are listed below, lowest first. A module may
import from its own layer and the ones under it, never from a higher one, and the imports
between modules must form no circle, inside one layer included. Every import counts: at module
level, inside a function (a "lazy" import) and under ``if TYPE_CHECKING``, because each one is a
dependency the layer above must not need. An import names one module; the parent packages that
Python initialises first (``profwin`` for ``profwin.errors``) are not counted, else every module
would depend on the facade. So ``from profwin import spec`` (a submodule) counts as
``import profwin.spec``, and ``from profwin.discovery import plugins`` (a name) as an
import of ``profwin.discovery``.

Run ``python packages/profwin-core/tests/test_layers.py`` to print the circles and upward
imports found (the figures the test holds at 0).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "src" / "profwin"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        ("profwin.errors", "profwin.arguments", "profwin.installed", "profwin.about", "profwin.lazy", "profwin.formats"),
    ),
    (
        "values",
        (
            "profwin.window",
            "profwin.selection",
            "profwin.inputs",
            "profwin.atomic",
            "profwin.markers",
            "profwin.json_form",
            "profwin.provenance",
        ),
    ),
    ("spec", ("profwin.spec", "profwin.activities", "profwin.options", "profwin.documents")),
    ("plugin protocols", ("profwin.protocols", "profwin.engine", "profwin.parts")),
    ("discovery", ("profwin.discovery",)),
    ("engine runtime", ("profwin.runtime", "profwin.runtime.*")),
    (
        "loading and running",
        (
            "profwin.config",
            "profwin.session",
            "profwin.rollouts",
            "profwin.render",
            "profwin.torch_driver",
            "profwin.nsys_driver",
        ),
    ),
    ("commands", ("profwin.demo", "profwin.cli_runner", "profwin.cli", "profwin.__main__")),
    ("facades", ("profwin", "profwin.plugin", "profwin.plugin.*")),
)
"""Lowest first. ``name.*`` is every module inside the package ``name``."""


def modules() -> dict[str, Path]:
    """Every module of core by dotted name (a package by its own name)."""
    found = {}
    for path in CORE.rglob("*.py"):
        parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def layer_of(module: str) -> int | None:
    for i, (_, members) in enumerate(LAYERS):
        for member in members:
            if module == member or (member.endswith(".*") and module.startswith(member[:-1])):
                return i
    return None


def _imports(module: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(imported core module, line) for every import in ``path``, wherever it stands."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                if f"{base}.{alias.name}" in known:  # a submodule: as ``import base.name``
                    yield f"{base}.{alias.name}", node.lineno
                elif base in known:
                    yield base, node.lineno


def graph() -> dict[str, dict[str, int]]:
    """module -> {imported core module: first line importing it}."""
    found = modules()
    edges: dict[str, dict[str, int]] = {}
    for module, path in found.items():
        targets: dict[str, int] = {}
        for target, line in _imports(module, path, set(found)):
            if target != module:
                targets.setdefault(target, line)
        edges[module] = targets
    return edges


def upward_imports(edges: dict[str, dict[str, int]]) -> list[str]:
    bad = []
    for module, targets in sorted(edges.items()):
        for target, line in sorted(targets.items()):
            here, there = layer_of(module), layer_of(target)
            if here is not None and there is not None and there > here:
                bad.append(f"{module}:{line} imports {target} ({LAYERS[here][0]} -> {LAYERS[there][0]})")
    return bad


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in modules() if layer_of(m) is None)
    assert unplaced == [], "add each new module to LAYERS here and to docs/architecture.md"


def test_no_import_runs_back_up() -> None:
    edges = graph()
    assert sum(len(t) for t in edges.values()) > 100  # the graph really was read
    assert upward_imports(edges) == []


def test_no_imports_close_a_circle() -> None:
    assert circles(graph()) == []


def test_core_never_imports_the_trace_toolkit() -> None:
    """profwin-traces sits on core (it depends on profwin-core): an import of it from core would
    run back up, out of the distribution, where no layer above can see it."""
    found = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{module}:{node.lineno}" for name in names if name.split(".")[0] == "profwin_traces"]
    assert found == []


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """Both checks fire on a planted upward import and a planted circle (lazy, inside a function)."""
    edges = graph()
    edges["profwin.errors"] = {**edges["profwin.errors"], "profwin.cli": 1}
    assert upward_imports(edges) == ["profwin.errors:1 imports profwin.cli (foundation -> commands)"]
    assert ["profwin.errors", "profwin.window"] in circles({**edges, "profwin.errors": {"profwin.window": 1}})
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from profwin.cli import main\n")
    assert list(_imports("profwin.lazy", lazy, {"profwin.cli"})) == [("profwin.cli", 2)]


def test_the_docs_list_the_same_layers() -> None:
    text = (CORE.parents[3] / "docs" / "architecture.md").read_text()
    for name, members in LAYERS:
        assert f"| {name} |" in text, name
        for member in members:
            assert f"`{member}`" in text, member


if __name__ == "__main__":
    graph_now = graph()
    up, loops = upward_imports(graph_now), circles(graph_now)
    for line in up:
        print("upward:", line)
    for loop in loops:
        print("circle:", " <-> ".join(loop))
    print(
        f"{len(graph_now)} modules, {sum(len(t) for t in graph_now.values())} imports, {len(loops)} circles, {len(up)} upward imports"
    )
    sys.exit(1 if up or loops else 0)
