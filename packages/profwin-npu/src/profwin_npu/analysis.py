"""Offline parsing of ``*_ascend_pt`` folders (what ``analysis: false`` leaves for later)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from profwin.plugin import ConfigError, PluginError, checked, shown
from profwin.plugin.files import expand_user
from profwin_npu.driver import ASCEND_SUFFIX, import_torch_npu
from profwin_npu.options import EXPORT_TYPES

__all__ = ["PARSED_DIR", "analyse"]

PARSED_DIR = "ASCEND_PROFILER_OUTPUT"
"""What parsing adds to an ``*_ascend_pt`` folder: ``trace_view.json``, ``kernel_details.csv``..."""


@checked
def analyse(
    path: str | os.PathLike[str], *, export_type: str | Sequence[str] | None = None, processes: int | None = None
) -> list[Path]:
    """Parse every ``*_ascend_pt`` folder at or under ``path``; return the folders parsed.

    Calls ``torch_npu.profiler.profiler.analyse``, which shells out to CANN's ``msprof``, so it
    runs where torch_npu and CANN are installed (not necessarily the machine that profiled).
    torch_npu swallows parse errors, so success is judged by the ``ASCEND_PROFILER_OUTPUT``
    folders it leaves: a folder without one raises :class:`profwin.PluginError`.
    """
    root = expand_user(path, what="path").absolute()
    try:
        targets = [root] if root.name.endswith(ASCEND_SUFFIX) else sorted(p for p in root.glob(f"*{ASCEND_SUFFIX}") if p.is_dir())
    except OSError as exc:  # a name too long, a folder not readable
        raise ConfigError(f"cannot be read: {exc.strerror or exc} (got {str(root)!r})", path="path") from None
    if not targets:
        raise ConfigError(f"has no *{ASCEND_SUFFIX} folder to parse (got {str(root)!r})", path="path")
    types = [export_type] if isinstance(export_type, str) else None if export_type is None else list(export_type)
    for item in types or ():
        if item not in EXPORT_TYPES:
            raise ConfigError(f"must be one of {list(EXPORT_TYPES)} (got {shown(item)})", path="export_type")
    if processes is not None and (isinstance(processes, bool) or not isinstance(processes, int) or processes < 1):
        raise ConfigError(f"must be a positive int (got {shown(processes)})", path="processes")
    import_torch_npu()
    from torch_npu.profiler.profiler import analyse as torch_npu_analyse

    kwargs: dict[str, object] = {"export_type": types}
    if processes is not None:
        kwargs["max_process_number"] = min(processes, os.cpu_count() or 1)
    torch_npu_analyse(str(root), **kwargs)
    unparsed = [str(p) for p in targets if not (p / PARSED_DIR).is_dir()]
    if unparsed:
        raise PluginError(
            f"torch_npu did not parse {unparsed} (no {PARSED_DIR} folder). Parsing needs CANN's msprof on PATH "
            "(source /usr/local/Ascend/ascend-toolkit/set_env.sh); torch_npu printed the reason above"
        )
    return targets
