"""What ``profwin.plugin.checked`` costs per call: the checker before and after beartype, side by side.

Each row is one signature of profwin's public surface, written out as a function that does nothing
(so the row is the checker's cost alone), called with valid arguments:

* ``name: str``: ``profwin.backend``;
* a spec mapping of 4 keys, ``path: str`` and ``base_dir: str | os.PathLike[str] | None``:
  ``profwin.spec_from_mapping``;
* 8 trace paths, ``Iterable[str | Path]``: ``profwin_traces.trace_files``;
* a backend object (a runtime-checkable protocol), a URL, a window and a ``Literal``:
  ``profwin.remote_session``;
* a class of 4 scalar fields: an options class such as ``MemoryOptions``.

``old`` is ``profwin/arguments.py`` as it was before issue 40 (it parsed module source with
``ast``; read with ``git show`` into a temporary folder and imported there: it is in no package),
``new`` the one installed. Printed per row: calls per second bare and with each checker, the
checker's own time per call, new/old, and the first call of each with its decoration (where the
hints are resolved and beartype writes its checker), made before the timing.

With beartype importable (``uv run --no-sync --with beartype python benchmarks/checked_cost.py``),
a ``beartype`` column adds beartype's own decorator on the same functions (its type check alone,
none of profwin's rules: every item of a container, text no ``Sequence[str]``, nesting, paths),
and the import section its import. The import section gives the CPU time of each import in a
fresh interpreter, best of ``--repeat``: what a process pays once, where a checked call pays
microseconds.

    uv run --no-sync python benchmarks/checked_cost.py [--old REV] [--calls 20000] [--repeat 5] [--smoke]

``--smoke`` (integration_tests/test_benchmarks.py): 200 calls, once; where the old checker cannot be
read (a shallow clone has no history), its column is left out and the line says why.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import profwin.arguments

ROOT = Path(__file__).resolve().parents[1]
ARGUMENTS = "packages/profwin-core/src/profwin/arguments.py"

SIGNATURES = """
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable


@runtime_checkable
class Backend(Protocol):
    name: str

    def plan(self, spec: Any, version: str | None = None) -> Any: ...


class Window:
    pass


def backend(name: str) -> None:
    pass


def spec_from_mapping(data: Mapping[Any, Any], *, path: str = "", base_dir: str | os.PathLike[str] | None = None) -> None:
    pass


def trace_files(paths: Iterable[str | Path]) -> None:
    pass


def remote_session(
    engine: str | Backend,
    targets: object,
    window: Window | str,
    *,
    timeout: float = 30.0,
    on_active: Literal["error", "restart"] = "error",
) -> None:
    pass


class Options:
    def __init__(self, *, max_entries: int = 100_000, stacks: bool = True, timeline: str = "events", top_ops: int = 10) -> None:
        pass
"""


class _Engine:
    name = "toy"

    def plan(self, spec: Any, version: str | None = None) -> Any:
        return None


def _old_revision() -> str:
    """The last commit whose checker parsed module source with ``ast`` (before issue 40)."""
    if "_type_checking_imports" in (ROOT / ARGUMENTS).read_text():
        return "HEAD"
    found = subprocess.run(
        ["git", "log", "-1", "--format=%H", "-S", "_type_checking_imports", "--", ARGUMENTS],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return f"{found}^"


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _rate(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], calls: int, repeat: int) -> float:
    """Calls of ``function(*args, **kwargs)`` per second, the best of ``repeat`` runs of ``calls`` calls."""
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        for _ in range(calls):
            function(*args, **kwargs)
        best = min(best, time.perf_counter() - began)
    return calls / best


def _beartype() -> Callable[[Callable[..., Any]], Callable[..., Any]] | None:
    try:
        from beartype import BeartypeConf, beartype
    except ImportError:
        return None
    return beartype(conf=BeartypeConf(violation_param_type=TypeError, is_pep484_tower=True))


def _import_cpu_ms(statement: str, repeat: int) -> float:
    """CPU milliseconds of ``statement`` (imports) in a fresh interpreter, the best of ``repeat``."""
    code = f"import time\nt = time.process_time()\n{statement}\nprint((time.process_time() - t) * 1e3)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(repeat)
    ]
    return min(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", default=None, help="the revision of the old checker (default: the last before issue 40)")
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="200 calls, once: that it runs, not what it measures")
    args = parser.parse_args()
    if args.smoke:
        args.calls, args.repeat = 200, 1
    bear = _beartype()
    with tempfile.TemporaryDirectory(prefix="profwin-checked-cost-") as folder:
        (Path(folder) / "bench_signatures.py").write_text(SIGNATURES)
        sigs = _module("bench_signatures", Path(folder) / "bench_signatures.py")
        checkers: list[tuple[str, Callable[..., Any]]] = []
        try:
            old_rev = args.old or _old_revision()
            source = subprocess.run(
                ["git", "show", f"{old_rev}:{ARGUMENTS}"], cwd=ROOT, capture_output=True, text=True, check=True
            )
        except (subprocess.CalledProcessError, OSError) as exc:
            print(f"old: not measured, the checker before issue 40 cannot be read from git here ({exc})")
        else:
            (Path(folder) / "old_arguments.py").write_text(source.stdout)
            checkers.append(("old", _module("old_arguments", Path(folder) / "old_arguments.py").checked))
            print(f"old: {ARGUMENTS} at {old_rev}; new: the installed profwin.arguments")
        rows: list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
            ("backend(name)", sigs.backend, ("vllm",), {}),
            ("spec_from_mapping(4 keys)", sigs.spec_from_mapping,
             ({"window": "20:80", "record": ["shapes"], "output_dir": "traces", "ranks": [0, 1]},), {"path": "profiler"}),
            ("trace_files(8 paths)", sigs.trace_files, ([f"rank{i}.pt.trace.json" for i in range(8)],), {}),
            ("remote_session(backend, ...)", sigs.remote_session, (_Engine(), "http://h:1", "20:80"), {"timeout": 5}),
            ("Options(4 fields)", sigs.Options, (), {"max_entries": 5000, "stacks": False, "timeline": "steps", "top_ops": 3}),
        ]  # fmt: skip
        checkers.append(("new", profwin.arguments.checked))
        if bear is not None:
            checkers.append(("beartype", bear))
        names = [name for name, _ in checkers]
        ratio = "old" in names
        print(f"{args.calls:,} calls, best of {args.repeat}: thousands of calls per second (k/s), the checker's own µs a call\n")
        head = f"{'signature':<30} {'bare k/s':>9}" + "".join(f" {n + ' k/s':>13}" for n in names)
        head += "".join(f" {n + ' µs':>12}" for n in names) + (f" {'new/old':>8}" if ratio else "")
        head += "".join(f" {'1st ' + n:>13}" for n in names)
        print(head)
        print("-" * len(head))
        for label, function, call_args, call_kwargs in rows:
            firsts, wrapped = [], []
            for _, checker in checkers:
                # A class afresh, with its own __init__ (a checker wraps that one), for each checker.
                target = (
                    type(function.__name__, (function,), {"__init__": function.__init__})
                    if isinstance(function, type)
                    else function
                )
                began = time.perf_counter()
                one = checker(target)
                one(*call_args, **call_kwargs)
                firsts.append(time.perf_counter() - began)
                wrapped.append(one)
            bare = _rate(function, call_args, call_kwargs, args.calls, args.repeat)
            rates = [_rate(f, call_args, call_kwargs, args.calls, args.repeat) for f in wrapped]
            own = [1e6 / r - 1e6 / bare for r in rates]
            line = f"{label:<30} {bare / 1e3:>9.0f}" + "".join(f" {r / 1e3:>13.1f}" for r in rates)
            line += "".join(f" {o:>12.2f}" for o in own) + (f" {rates[1] / rates[0]:>7.1f}x" if ratio else "")
            line += "".join(f" {t * 1e3:>11.2f}ms" for t in firsts)
            print(line)
    print("\nnew/old: how many times as many checked calls per second; 1st: decorating and the first call.")
    imports = [("import profwin", "import profwin"), ("import profwin.cli (the whole command line)", "import profwin.cli")]
    if bear is not None:
        imports.append(("import beartype, beartype.door", "import beartype, beartype.door"))
    print(f"\nimports, CPU ms in a fresh interpreter (best of {args.repeat}):")
    for label, statement in imports:
        print(f"  {label:<45} {_import_cpu_ms(statement, args.repeat):>7.1f}")


if __name__ == "__main__":
    main()
