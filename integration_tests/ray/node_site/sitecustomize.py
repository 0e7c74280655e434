"""Loaded by every Python process of the test's Ray cluster (this folder is on their
``PYTHONPATH``); it acts only on a node (``PROFWIN_NODE_DIR`` set: the nodes' raylets and workers).

A hold, for the fault tests (``cluster_checks.py``): while a FIFO ``.NAME.hold`` lies beside a
node's file ``NAME``, that node's reads of the file past its first chunk wait in ``open()`` of the
FIFO until the test has opened it for writing, then until the test closes it. The test thereby
knows a copy is under way and cannot end (the file's first chunk has arrived, the rest cannot)
when it removes the file, kills the node or sends Ctrl-C, without betting on how fast anything
runs. profwin's own code is unchanged: the node's ``profwin_ray.files.read_chunk`` is wrapped.
"""

from __future__ import annotations

import os

if os.environ.get("PROFWIN_NODE_DIR"):
    import importlib.abc
    import importlib.machinery
    import stat
    import sys
    from types import ModuleType
    from typing import Any

    def _hold(files: ModuleType) -> None:
        read = files.read_chunk

        def read_chunk(file: Any, offset: int, size: int) -> bytes:
            hold = os.path.join(os.path.dirname(file.path), f".{os.path.basename(file.path)}.hold")
            try:
                held = offset > 0 and stat.S_ISFIFO(os.lstat(hold).st_mode)
            except OSError:
                held = False
            if held:
                with open(hold, "rb") as fifo:  # until the test opens it for writing
                    fifo.read()  # until the test closes it
            return read(file, offset, size)

        files.read_chunk = read_chunk

    class _Finder(importlib.abc.MetaPathFinder):
        """Wraps ``profwin_ray.files`` when a process imports it (most of a node's processes,
        Ray's own agents among them, never do: they are not slowed down)."""

        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name != "profwin_ray.files":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module: ModuleType) -> None:
                run(module)
                _hold(module)

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, _Finder())
