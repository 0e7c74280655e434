"""Package roots that import their names on first use (``profwin.lazy``): what type checkers read
is what runs, and what they save is not imported.

Each lazy root lists its names twice: under ``if TYPE_CHECKING`` (for type checkers and editors)
and in its ``lazy_exports`` call (what runs). The first test reads every root of the workspace
and checks, name by name, that the two agree and that ``__all__`` is covered; the others check
what the laziness is for, in a fresh interpreter: listing the plugins and their step markers, as
every trace command does, imports neither asyncio nor the HTTP client nor a backend's modules.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[2]
ROOTS = {
    "profwin": PACKAGES / "profwin-core/src/profwin/__init__.py",
    "profwin_traces": PACKAGES / "profwin-traces/src/profwin_traces/__init__.py",
    **{
        f"profwin_{name}": PACKAGES / f"profwin-{name}/src/profwin_{name}/__init__.py"
        for name in ("vllm", "sglang", "npu", "memory", "verl", "slime")
    },
}


def _type_checking_imports(path: Path) -> dict[str, tuple[str, str]]:
    """``{public name: (module, name there)}`` from the root's ``if TYPE_CHECKING:`` block."""
    found = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.dump(statement)
                assert statement.module, ast.dump(statement)
                for alias in statement.names:
                    found[alias.asname or alias.name] = (statement.module, alias.name)
    return found


@pytest.mark.parametrize("root", sorted(ROOTS))
def test_what_type_checkers_read_is_what_runs(root: str) -> None:
    imports = _type_checking_imports(ROOTS[root])
    module = importlib.import_module(root)
    assert imports, f"{root} has no TYPE_CHECKING imports"
    for public, (home, name) in imports.items():
        assert getattr(module, public) is getattr(importlib.import_module(home), name), (root, public)
    eager = {name for name in module.__all__ if name not in imports and name in vars(module)}
    assert set(module.__all__) <= set(imports) | eager, sorted(set(module.__all__) - set(imports) - eager)
    assert set(imports) <= set(dir(module))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = module.no_such_name


def _fresh(code: str, also: list[str] | None = None) -> list[str]:
    """The modules among a few heavy ones (and ``also``) that ``code`` leaves imported, in a new interpreter."""
    watched = ["asyncio", "ssl", "http.client", "profwin.runtime.remote", "profwin_vllm.backend", "profwin_sglang.backend"]
    watched += ["profwin_traces.diff", "profwin_traces.trim", *(also or [])]
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {watched!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.split()


def test_step_markers_and_plugin_listing_import_no_session_machinery() -> None:
    assert _fresh("import profwin.discovery as d; d.step_markers(); d.plugins()") == []
    assert _fresh("import profwin, profwin.cli, profwin_traces; profwin.Window.parse('2:5')") == []


def test_summarize_imports_neither_diff_nor_trim(tmp_path: Path) -> None:
    assert _fresh("from profwin_traces import render_summary, summarize, summarize_ranks") == []
    assert _fresh("from profwin_traces import diff") == ["profwin_traces.diff"]
    trace = tmp_path / "t.pt.trace.json"
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 10, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "pid": 1, "tid": 1},
    ]
    trace.write_text(json.dumps({"traceEvents": events}))
    # The command on one trace: not the modules of ranks and plots either.
    command = f"import contextlib, io\nfrom profwin.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n    assert main(['summarize', {str(trace)!r}]) == 0"
    assert _fresh(command, also=["profwin_traces.ranks", "profwin_traces.plot"]) == []


def test_a_name_that_is_also_a_submodule_stays_the_name() -> None:
    """``profwin.router`` is the function once its module, ``profwin.runtime.router``, is loaded,
    and ``profwin_vllm.session`` is the function even after its module of the same name is
    imported by that name (the import system binds the package's attribute to a submodule it
    loads)."""
    code = (
        "import sys\n"
        "import profwin.runtime.router, profwin_vllm.session\n"
        "from profwin_sglang.session import session\n"
        "import profwin, profwin_sglang, profwin_vllm\n"
        "named = (profwin.router, profwin_vllm.session, profwin_sglang.session)\n"
        "print(*(callable(n) for n in named), type(sys.modules['profwin.runtime.router']).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["True", "True", "True", "module"]
