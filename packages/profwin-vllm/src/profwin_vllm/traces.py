"""Finding the files a vLLM profiling session wrote, and the steps each one covers.

vLLM's worker writes ``<worker>.<time_ns>.pt.trace.json[.gz]`` (torch's
``tensorboard_trace_handler``) and ``<worker>.profiler_out.txt`` (a summary table) into
``torch_profiler_dir``. ``<worker>`` is ``<prefix>_<rank suffix>`` where the rank suffix is
``dp{d}_pp{p}_tp{t}_dcp{c}_ep{e}_rank{global}``, or ``rank{global}`` when the parallel groups
are not up (the CPU worker); before 0.31 the CPU worker wrote ``<instance id>-rank-<r>``. The
AsyncLLM frontend, when on, writes ``<prefix>_<host>_<pid>.async_llm.<time_ns>.pt.trace.json.gz``.

Each recorded engine step carries one ``record_function`` annotation named
``execute_context_<n>(<tokens>)_generation_<n>(<tokens>)`` (with ``detailed_trace_annotation``:
``execute_<tokens>_context_<n>(sq..sk..)...``): the step marker this plugin declares, which core's
``count_steps`` counts, so the steps a trace holds never rest on the settings that were sent.

With ``profiler: proton`` (vLLM >= 0.28) the worker writes, into ``proton_profiler_dir``, one file
per session: ``proton_<worker>_pid<pid>_<32 hex>_run<n>.<format>`` (``ProtonProfilerWrapper``:
``<format>`` is Proton's, ``hatchet`` for tree data, ``chrome_trace`` for trace data,
``hatchet_msgpack`` on request). They come back as ``proton-profile`` artifacts whose steps are
not counted (``None``). With ``profiler: cuda`` vLLM writes nothing: nsys writes its report.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from attrs import frozen

from profwin.plugin import TORCH_MARKER, Artifact, RankSelection, Window, checked
from profwin_traces import TraceError, count_steps, token_steps, trim
from profwin_vllm._plugin import STEP_MARKER

__all__ = ["PROTON_FORMATS", "STEP_ANNOTATION", "TraceFile", "proton_artifacts", "session_artifacts", "trimmed"]

# Named, not looked up: the engine process may have profwin on PYTHONPATH without the entry
# points that fill the registry. torch's marker first, as the registry would rank it.
_MARKERS = (TORCH_MARKER, STEP_MARKER)

STEP_ANNOTATION = STEP_MARKER.regex
"""How the name of the annotation vLLM's worker puts around each recorded step begins."""

_TRACE = re.compile(r"(?P<worker>.+)\.(?P<ns>\d+)\.pt\.trace\.json(?:\.gz)?")
_RANK = re.compile(r"(?:^|[_-])rank-?(?P<rank>\d+)$")
_FRONTEND = ".async_llm"
PROTON_FORMATS: tuple[str, ...] = ("hatchet", "hatchet_msgpack", "chrome_trace")
"""The suffixes of the files Triton Proton finalizes (its ``output_format``)."""
_PROTON = re.compile(rf"proton_(?P<worker>.+)_pid\d+_[0-9a-f]{{32}}_run\d+\.(?:{'|'.join(PROTON_FORMATS)})")


@frozen
class TraceFile:
    """A trace file name taken apart."""

    path: Path
    worker: str
    time_ns: int
    rank: int | None
    frontend: bool

    @classmethod
    def parse(cls, path: Path) -> TraceFile | None:
        match = _TRACE.fullmatch(path.name)
        if match is None:
            return None
        worker = match["worker"]
        frontend = worker.endswith(_FRONTEND)
        rank = _RANK.search(worker)
        return cls(path, worker, int(match["ns"]), None if rank is None else int(rank["rank"]), frontend)

    def has_prefix(self, prefix: str) -> bool:
        """Whether vLLM named this file for ``start_profile(profile_prefix=prefix)``."""
        return self.worker.startswith(f"{prefix}_") and (
            self.frontend
            or re.fullmatch(rf"{re.escape(prefix)}_(?:dp\d+_pp\d+_tp\d+_dcp\d+_ep\d+_)?rank\d+", self.worker) is not None
        )

    @property
    def summary(self) -> Path:
        """The ``profiler_out.txt`` table vLLM writes beside a worker trace."""
        return self.path.with_name(f"{self.worker}.profiler_out.txt")


@checked
def session_artifacts(
    paths: Iterable[Path],
    *,
    window: Window,
    prefix: str | None,
    ranks: RankSelection,
    producer: str,
) -> list[Artifact]:
    """Artifacts for the trace files of one session, with the steps each covers.

    ``prefix``: keep only files named for it (``None``: the engine ignores prefixes, keep all).
    ``ranks``: ``"all"`` or the ranks to keep. A worker trace covers ``window.start`` plus as many
    steps as it has annotations (a token window: the session steps its ``profwin.tokens``
    annotations name); a frontend trace covers the whole session (``steps=None``).
    """
    found = [t for t in map(TraceFile.parse, sorted(paths)) if t is not None]
    if prefix is not None:
        found = [t for t in found if t.has_prefix(prefix)]
    artifacts = []
    for trace in sorted(found, key=lambda t: (t.frontend, t.rank or 0, t.time_ns)):
        rank = trace.rank or 0
        if not trace.frontend and ranks != "all" and rank not in ranks:
            continue
        if trace.frontend:
            artifacts.append(_artifact(trace.path, None, rank, "frontend-trace", producer))
            continue
        try:
            if window.in_tokens:  # the engine decided the steps: its annotations name them
                covered = token_steps(trace.path)
            else:
                steps = count_steps(trace.path, markers=_MARKERS)
                covered = Window(window.start, window.start + steps) if steps else None
        except TraceError:  # kept whole: what the engine wrote, its steps unknown
            covered = None
        artifacts.append(_artifact(trace.path, covered, rank, "trace", producer))
        # The table is rewritten by every session of the same worker name: only a table written
        # after this trace belongs to it.
        if trace.summary.is_file() and trace.summary.stat().st_mtime_ns >= trace.time_ns:
            artifacts.append(_artifact(trace.summary, covered, rank, "summary", producer))
    return artifacts


def _artifact(path: Path, steps: Window | None, rank: int, kind: str, producer: str) -> Artifact:
    return Artifact(path=path.absolute(), steps=steps, bytes=path.stat().st_size, rank=rank, kind=kind, producer=producer)


@checked
def proton_artifacts(paths: Iterable[Path], *, prefix: str | None, ranks: RankSelection, producer: str) -> list[Artifact]:
    """Artifacts for the Proton files of one session (``prefix`` and ``ranks`` as in
    :func:`session_artifacts`); Proton's data holds no step markers profwin reads, so ``steps``
    is ``None``."""
    artifacts = []
    for path in sorted(paths):
        match = _PROTON.fullmatch(path.name)
        if match is None:
            continue
        worker = TraceFile(path, match["worker"], 0, None, frontend=False)
        if prefix is not None and not worker.has_prefix(prefix):
            continue
        found = _RANK.search(match["worker"])
        rank = 0 if found is None else int(found["rank"])
        if ranks != "all" and rank not in ranks:
            continue
        artifacts.append(_artifact(path, None, rank, "proton-profile", producer))
    return artifacts


def trimmed(artifacts: list[Artifact], window: Window) -> tuple[list[Artifact], list[str]]:
    """The session's artifacts with each worker trace cut to ``window`` (in place, through a
    hidden file renamed over it: a trace is whole or unchanged), for an engine that recorded more
    than the window (its launch window, :func:`profwin_vllm.plan.fixed_at_launch`). A trace that
    holds none of the window's steps is left out, with a note; the summary tables vLLM writes
    beside each trace keep covering everything recorded."""
    kept: list[Artifact] = []
    notes: list[str] = []
    for artifact in artifacts:
        if artifact.kind != "trace" or artifact.steps is None:
            kept.append(artifact)
            continue
        path = artifact.path
        scratch = path.with_name(f".{path.name}.trimmed{'.gz' if path.name.endswith('.gz') else ''}")
        try:
            result = trim(path, window, scratch, first_step=artifact.steps.start, markers=_MARKERS)
        except TraceError as exc:
            scratch.unlink(missing_ok=True)
            notes.append(f"{path.name} holds engine steps {artifact.steps}, none of window {window}: left out ({exc.reason})")
            continue
        os.replace(scratch, path)
        steps = Window.parse(result.steps)
        kept.append(_artifact(path, steps, artifact.rank, "trace", artifact.producer))
    return kept, notes
