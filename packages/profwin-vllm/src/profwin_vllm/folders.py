"""Where a vLLM server writes its traces, when profwin can know it: the folder is fixed when the
server is launched (``torch_profiler_dir`` of ``--profiler-config``; ``VLLM_TORCH_PROFILER_DIR``
before 0.16), and ``/start_profile`` takes none. A session that looks in another folder finds
nothing although the server recorded the window, so a server on this machine whose folder is not
the session's is refused before anything is sent (:func:`elsewhere`).

The folder comes from the workers' report (profwin-vllm's engine plugin, ``GET /profwin``) or,
for a stock server, from the command line of the process that serves the URL here. A server on
another machine (or behind a tunnel, in a container) is never judged: its paths are not this
machine's.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path

from profwin.plugin.engines import EngineVersion, LocalProcess

__all__ = ["elsewhere", "folder_field", "launched_folder", "reported_folder", "serves_vllm"]

_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main")
_ENV_REMOVED = EngineVersion.parse("0.16")  # VLLM_TORCH_PROFILER_DIR's last release was 0.15


def folder_field(profiler: object) -> str:
    """The field of vLLM's profiler config that names the trace folder of ``profiler``: proton's
    own, else torch's (``cuda`` has none: nsys writes where its ``-o`` says)."""
    return "proton_profiler_dir" if profiler == "proton" else "torch_profiler_dir"


def serves_vllm(title: Sequence[str]) -> bool:
    """Whether a command line is a vLLM server's: ``vllm serve`` or ``python -m`` its API server."""
    return any(w in _MODULES for w in title) or any(
        os.path.basename(w) == "vllm" and nxt == "serve" for w, nxt in itertools.pairwise(title)
    )


def reported_folder(reports: object) -> str | None:
    """The folder every worker reports it writes traces to, or ``None`` (no report, or they differ)."""
    if not isinstance(reports, list) or not reports:
        return None
    found = {r.get("folder") if isinstance(r, dict) else None for r in reports}
    folder = found.pop() if len(found) == 1 else None
    return folder if isinstance(folder, str) and folder else None


def launched_folder(server: LocalProcess, version: EngineVersion) -> str | None:
    """The trace folder a stock server's command line gives it (made absolute as vLLM does, from
    the server's own home and working directory), or ``None`` when it names none that profwin
    can read: another profiler (``cuda``), a URI, a config file, a command line it cannot parse."""
    config: dict[str, object] = {}
    words = list(server.title)
    for i, word in enumerate(words):
        key, eq, value = word.partition("=")
        if not key.startswith("--profiler-config"):
            continue
        if not eq:
            if i + 1 >= len(words):
                return None
            value = words[i + 1]
        if key == "--profiler-config":
            try:
                given = json.loads(value)
            except ValueError:
                return None
            if not isinstance(given, dict):
                return None
            config.update(given)
        elif key.startswith("--profiler-config."):
            config[key.removeprefix("--profiler-config.").replace("-", "_")] = value
    environ = server.environ or {}
    if not config and version < _ENV_REMOVED and environ.get("VLLM_TORCH_PROFILER_DIR"):
        config = {"profiler": "torch", "torch_profiler_dir": environ["VLLM_TORCH_PROFILER_DIR"]}
    profiler = config.get("profiler", "torch")
    folder = config.get(folder_field(profiler))
    if profiler not in ("torch", "proton") or not isinstance(folder, str) or not folder or "://" in folder:
        return None
    if folder.startswith("~"):
        home = environ.get("HOME")
        if not home or not (folder == "~" or folder.startswith("~/")):
            return None
        folder = home + folder[1:]
    if not os.path.isabs(folder):
        if server.cwd is None:
            return None
        folder = os.path.join(server.cwd, folder)
    return os.path.normpath(folder)


def elsewhere(folder: str | None, output_dir: Path) -> str | None:
    """Why a session looking in ``output_dir`` would find nothing of a server on this machine that
    writes to ``folder``; ``None`` when they are one folder or ``folder`` is not known."""
    if folder is None or os.path.realpath(folder) == os.path.realpath(output_dir):
        return None
    return (
        f"this server writes its traces to {folder} (the folder of its --profiler-config, fixed when it was launched), "
        f"not to {output_dir}, where this session would look for them: nothing was sent; "
        f"use --out {folder} (output_dir)"
    )
