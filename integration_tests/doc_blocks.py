"""The docs are tests: every fenced block of README.md and docs/ runs, through Sybil.

Why Sybil (10.x): it is made for this and kept up (pytest integration, Markdown lexing of fenced
blocks at any indentation, a namespace per page shared by its Python blocks, invisible setup blocks
in HTML comments), and it takes a parser per language, so shell blocks run as well as Python. The
alternatives read Python only: pytest-examples (pydantic's: Python blocks, formatting, ``#>``
output) and pytest-markdown-docs (Python blocks). Sybil's own ``skip`` directive reports a pytest
skip, which this suite refuses (the root conftest); a block that cannot run here is marked with
profwin's own directive instead, and is still checked as far as it can be (its syntax).

What each fenced block of a page does (one test per block, in page order):

- ``python``: runs in the page's namespace (the page's blocks build on each other), in the page's
  own empty working folder;
- ``bash``: runs with ``bash -euo pipefail`` in that folder, the dev environment's commands first on
  ``PATH`` (``profwin``, ``profwin-memory``, ``python``);
- ``console``: each ``$ command`` runs in one bash in that folder; the lines after it are the output
  the page shows, checked against what the command printed (stdout and stderr): ``…`` in a line
  stands for any text, a line that is only ``…`` for any lines;
- ``yaml``, ``json``, ``toml``: parsed;
- ``text`` and plain blocks: shown text (outputs and figures), not commands: not collected.

Directives, HTML comments in the page's source (invisible on the site, counted by
``test_docs.py``), each about the next fenced block:

- ``<!-- docs: cannot-run-here: WHY -->``: the block needs what this machine has not (a GPU, an NPU,
  a live engine, a trainer, a cluster); it is syntax-checked only (``compile`` for Python,
  ``bash -n`` for shell, parsing for data);
- ``<!-- docs: in-checkout -->``: the block runs in the repository's root (the quick start's "from a
  checkout"), one such block at a time on the machine; files it leaves there are removed after it.

Sybil's ``<!-- invisible-code-block: python ... -->`` sets up what a block only names
(``decode_one_token()``, ``max_new_tokens``), visibly in the source.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml
from sybil import Document, Example, Region, Sybil
from sybil.parsers.markdown import CodeBlockParser

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy brings tomli on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RUN_LANGUAGES = ("python", "bash", "console")
DATA_LANGUAGES = ("yaml", "json", "toml")
DIRECTIVE = re.compile(r"^[ \t]*<!-- docs: (?P<what>[a-z-]+)(?::[ \t]*(?P<why>.*?))? -->[ \t]*$", re.MULTILINE)
DIRECTIVES = ("cannot-run-here", "in-checkout")
_NEXT = "_docs_next"  # the namespace key a directive leaves for the next block
_TIMEOUT = 600


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RANK", "LOCAL_RANK", "PROFWIN_TRACEBACK")}
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    env["PYTHONUNBUFFERED"] = "1"  # stdout and stderr in the order a terminal shows them
    return env


def _directive(example: Example) -> None:
    what, why = example.parsed
    if what not in DIRECTIVES:
        raise ValueError(f"unknown docs directive {what!r} (known: {', '.join(DIRECTIVES)})")
    if what == "cannot-run-here" and not why:
        raise ValueError("a block that cannot run here says why: <!-- docs: cannot-run-here: WHY -->")
    example.namespace[_NEXT] = what


def _directives(document: Document) -> Iterable[Region]:
    for m in DIRECTIVE.finditer(document.text):
        yield Region(m.start(), m.end(), (m.group("what"), m.group("why")), _directive)


def _take(example: Example) -> str | None:
    """The directive that applies to this block (and is used up by it)."""
    return example.namespace.pop(_NEXT, None)


def _cwd(example: Example) -> Path:
    return Path(example.namespace["_docs_dir"])


class _Checkout:
    """The repository root as the working folder of one block at a time; what the block adds
    (untracked and ignored files) is removed after it."""

    def __init__(self) -> None:
        self.lock = Path(tempfile.gettempdir()) / f"profwin-docs-checkout-{os.getuid()}.lock"

    def _left(self) -> set[str]:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--", ".", ":!.venv"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        return {line[3:] for line in out.splitlines() if line[:2] in ("??", "!!")}

    def run(self, script: list[str]) -> subprocess.CompletedProcess[str]:
        with self.lock.open("w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            before = self._left()
            try:
                return subprocess.run(script, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=_TIMEOUT)
            finally:
                for name in self._left() - before:
                    if ".cache" in name or "__pycache__" in name:
                        continue
                    path = ROOT / name
                    if path.is_file() or path.is_symlink():
                        path.unlink()
                    elif path.is_dir():
                        shutil.rmtree(path)


def _failed(source: str, done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}:\n{source}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"


def _shell(example: Example, script: str, *, merged: bool = False) -> subprocess.CompletedProcess[str]:
    """``script`` in bash; ``merged``: stderr into stdout, in the order a terminal shows them."""
    command = ["bash", "-euo", "pipefail", "-c", f"exec 2>&1\n{script}" if merged else script]
    if _take(example) == "in-checkout":
        return _Checkout().run(command)
    return subprocess.run(command, cwd=_cwd(example), env=_env(), capture_output=True, text=True, timeout=_TIMEOUT)


def _not_here(example: Example, language: str) -> bool:
    """A block marked cannot-run-here: check what can be checked without running it."""
    if example.namespace.get(_NEXT) != "cannot-run-here":
        return False
    _take(example)
    source = example.parsed
    if language == "python":
        _compiled(example)
    elif language in ("bash", "console"):
        if language == "console":
            source = "\n".join(command for command, _ in _commands(source))
        done = subprocess.run(["bash", "-n"], input=source, capture_output=True, text=True)
        assert done.returncode == 0, f"not valid shell:\n{source}\n{done.stderr}"
    else:
        _parse_data(language, source)
    return True


def _compiled(example: Example) -> Any:
    """The block compiled with the page's line numbers, so a failure names the page's line."""
    return compile("\n" * example.line + str(example.parsed), example.path, "exec")


def run_python(example: Example) -> None:
    if _not_here(example, "python"):
        return
    if _take(example) == "in-checkout":
        raise ValueError("in-checkout is for shell blocks")
    code = _compiled(example)
    previous = os.getcwd()
    os.chdir(_cwd(example))
    try:
        exec(code, example.namespace)
    finally:
        os.chdir(previous)


def run_bash(example: Example) -> None:
    if _not_here(example, "bash"):
        return
    done = _shell(example, example.parsed)
    assert done.returncode == 0, _failed(example.parsed, done)


def _commands(source: str) -> list[tuple[str, list[str]]]:
    """A console block as ``(command, shown output lines)`` pairs; ``\\`` continues a command."""
    pairs: list[tuple[str, list[str]]] = []
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if pairs:
                pairs[-1][1].append(line)
            elif line.strip():
                raise ValueError(f"a console block starts with '$ ' (got {line!r})")
            i += 1
            continue
        command = line[2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command += "\n" + lines[i]
        pairs.append((command, []))
        i += 1
    return [(c, _trimmed(out)) for c, out in pairs]


def _trimmed(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _matches(shown: list[str], got: list[str]) -> bool:
    """``got`` is what ``shown`` shows: ``…`` in a line is any text, a line ``…`` any lines."""
    if not shown:
        return not got
    head = shown[0]
    if head.strip() == "…":
        return any(_matches(shown[1:], got[k:]) for k in range(len(got) + 1))
    if not got:
        return False
    pattern = ".*?".join(re.escape(part) for part in head.rstrip().split("…"))
    return re.fullmatch(pattern, got[0].rstrip()) is not None and _matches(shown[1:], got[1:])


_MARK = "\x1eprofwin-docs-command-done\x1e"


def run_console(example: Example) -> None:
    if _not_here(example, "console"):
        return
    pairs = _commands(example.parsed)
    script = "\n".join(f"{command}\nprintf '\\n{_MARK}\\n'" for command, _ in pairs)
    done = _shell(example, script, merged=True)
    assert done.returncode == 0, _failed(example.parsed, done)
    outputs = done.stdout.split(f"\n{_MARK}\n")
    for (command, shown), got in zip(pairs, outputs, strict=False):
        if shown:
            lines = _trimmed(got.splitlines())
            assert _matches(shown, lines), (
                f"$ {command}\nthe page shows:\n" + "\n".join(shown) + "\nit printed:\n" + "\n".join(lines)
            )


def _parse_data(language: str, source: str) -> Any:
    if language == "yaml":
        return yaml.safe_load(source)
    if language == "json":
        return json.loads(source)
    return tomllib.loads(source)


def check_data(language: str) -> Any:
    def evaluate(example: Example) -> None:
        if _not_here(example, language):
            return
        _take(example)
        _parse_data(language, example.parsed)

    return evaluate


def _setup(namespace: dict[str, Any]) -> None:
    namespace["_docs_dir"] = tempfile.mkdtemp(prefix="profwin-docs-")


def _teardown(namespace: dict[str, Any]) -> None:
    shutil.rmtree(namespace.pop("_docs_dir"), ignore_errors=True)


PARSERS = [
    _directives,
    CodeBlockParser("python", run_python),
    CodeBlockParser("bash", run_bash),
    CodeBlockParser("console", run_console),
    *(CodeBlockParser(language, check_data(language)) for language in DATA_LANGUAGES),
]

# Pages whose blocks are not collected yet, each with why (test_docs.py counts them apart).
NOT_YET: dict[str, str] = {}

PAGES = ["README.md", *(str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").rglob("*.md")))]


def sybil() -> Sybil:
    """The collector: every page of README.md and docs/."""
    return Sybil(
        parsers=PARSERS,
        path=str(ROOT),
        patterns=["README.md", "docs/*.md", "docs/*/*.md"],
        excludes=["packages/*/*.md", "integration_tests/*/*.md", "benchmarks/*.md", "benchmarks/*/*.md", *NOT_YET],
        setup=_setup,
        teardown=_teardown,
        name="docs",
    )


def fences(text: str) -> Iterator[tuple[int, str, str | None]]:
    """Every fenced block of a page: (line, language, the directive before it), for the count."""
    lines = text.splitlines()
    i, directive = 0, None
    while i < len(lines):
        m = re.match(r"^\s*(`{3,}|~{3,})(\S*)", lines[i])
        d = DIRECTIVE.match(lines[i])
        if d:
            directive = d.group("what")
        if m:
            fence, language = m.group(1), m.group(2)
            start = i + 1
            i += 1
            while i < len(lines) and not re.match(rf"^\s*{re.escape(fence)}\s*$", lines[i]):
                i += 1
            yield start, language, directive
            directive = None
        i += 1
