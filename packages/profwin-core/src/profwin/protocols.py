"""What a plugin provides: the entry-point object, the two plugin protocols, and their results.

How it works, and why: docs/internals.md, ``profwin.protocols``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

from attrs import field, frozen

from profwin.arguments import checked
from profwin.json_form import JsonForm
from profwin.markers import StepMarker
from profwin.spec import ProfileSpec
from profwin.window import Window

if TYPE_CHECKING:  # argparse is the command line's: not imported to list plugins
    import argparse

__all__ = [
    "BACKENDS_GROUP",
    "CLUSTERS_GROUP",
    "COMMANDS_GROUP",
    "ENGINE_FLAVOURS_GROUP",
    "PLUGIN_API",
    "PROFILERS_GROUP",
    "SPEC_FORMATS_GROUP",
    "TRAINERS_GROUP",
    "Artifact",
    "Cluster",
    "ClusterReport",
    "CollectInterrupted",
    "Command",
    "Driver",
    "PluginSpec",
    "Profiler",
    "RemoteResult",
    "SpecFormat",
    "fan_out",
]

_T = TypeVar("_T")
_U = TypeVar("_U")

PLUGIN_API = 2
"""Version of the plugin protocols (these and :mod:`profwin.engine`); a plugin built for another
version is reported ``incompatible``. 2: backends return an ``EnginePlan`` and
give ``EngineTarget`` objects; ``render_args``/``describe``/``start``/``stop`` are gone."""

BACKENDS_GROUP = "profwin.backends"
PROFILERS_GROUP = "profwin.profilers"
SPEC_FORMATS_GROUP = "profwin.spec_formats"
"""Readers of other tools' configs (a :class:`SpecFormat` each), asked by :func:`profwin.load_spec`
before a document is read as a profwin spec; profwin-verl registers verl's profiler blocks."""
CLUSTERS_GROUP = "profwin.clusters"
"""Cluster plugins: a :class:`PluginSpec` of kind ``cluster`` each, whose target implements
:class:`Cluster`: how ``profwin collect --ray`` and ``profwin summarize --ray`` reach the files on
every node (``ray = "profwin_ray._plugin:PLUGIN"`` in profwin-ray)."""
TRAINERS_GROUP = "profwin.trainers"
"""Trainer integrations (profwin-verl, -slime, -openrlhf, -trl): a :class:`PluginSpec` of kind
``trainer`` each, whose ``requires`` holds the trainer releases it supports
(``"trl>=1.11,<1.17"``) and whose target is its :class:`profwin.plugin.TrainerIntegration`;
``profwin plugins`` lists them."""
ENGINE_FLAVOURS_GROUP = "profwin.engine_flavours"
"""Functions ``(engine, version, spec) -> Mapping | None`` describing hardware builds of an engine
(vllm-ascend, SGLang-on-NPU); see :func:`profwin.plugin.engine_flavours`."""
COMMANDS_GROUP = "profwin.commands"
"""Commands another distribution adds to ``profwin`` (a :class:`Command` each, the entry point's
name being the command's): profwin-traces' ``summarize``, ``diff``, ``trim`` and ``merge``."""


@frozen(kw_only=True)
class PluginSpec:
    """The cheap, import-free description an entry point points at.

    Attributes:
        name: the key users type (``vllm``, ``npu``); must equal the entry-point name.
        kind: ``backend``, ``profiler``, ``trainer`` or ``cluster``.
        target: ``"module:attribute"`` of the implementation, imported on first use (a trainer
            integration's: its :class:`~profwin.plugin.TrainerIntegration`).
        requires: what the implementation needs at run time, as data: PEP 508 requirements
            naming a distribution and the releases supported (``("trl>=1.11,<1.17",)``,
            ``("torch",)``), the one place a plugin writes its range (OpenTelemetry's
            ``_instruments``). Checked against the installed distributions with ``packaging``
            (:func:`profwin.discovery.unmet`), so nothing is imported to list plugins; a
            trainer integration refuses a trainer outside them when it is enabled.
        install_hint: how to install what is missing (the versions are ``requires``'s to say).
        summary: one line for ``profwin plugins``.
        api: the :data:`PLUGIN_API` the plugin was written for.
        step_marker: how the producer marks steps in its traces, for ``profwin summarize``.
    """

    name: str
    kind: Literal["backend", "profiler", "trainer", "cluster"]
    target: str
    requires: tuple[str, ...] = ()
    install_hint: str = ""
    summary: str = ""
    api: int = PLUGIN_API
    step_marker: StepMarker | None = None


@frozen(kw_only=True)
class Command:
    """A ``profwin`` command from another distribution, registered under :data:`COMMANDS_GROUP`.

    Core's command line is built from every installed one (``profwin --help`` lists them), so the
    module the entry point names must import nothing heavy: ``run`` imports what the command
    needs when it runs. Errors it raises are reported like core's own (one line, exit 2).

    Attributes:
        help: one line for ``profwin --help`` and the CLI reference.
        arguments: adds the command's arguments to its parser (a :class:`~profwin.plugin.cli.CliParser`).
        run: runs the parsed command line; returns the exit code.
        writes_results: its output files are its result: a run stopped (Ctrl-C, SIGTERM) leaves
            none of them (core runs it in :func:`profwin.atomic.all_or_nothing`).
    """

    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    writes_results: bool = False


@frozen(kw_only=True)
class Artifact(JsonForm):
    """A file a profiling session wrote.

    Attributes:
        path: absolute path of the file (or directory, for NPU ``*_ascend_pt`` output).
        steps: the session steps it covers (``None`` when the producer cannot tell).
        bytes: its size on disk.
        rank: the rank that wrote it.
        kind: ``trace``, ``memory-snapshot``, ``memory-timeline``, ``memory-summary``, ...
        producer: the plugin (and, for remote engines, the server) that wrote it.

    ``to_dict()`` is its JSON form (for logs and ``--json`` output).
    """

    path: Path
    steps: Window | None
    bytes: int
    rank: int = 0
    kind: str = "trace"
    producer: str = ""


@frozen(kw_only=True)
class RemoteResult(JsonForm):
    """The outcome of one start/stop call on one live engine (a server URL or an object)."""

    target: str
    ok: bool
    message: str = ""
    artifacts: tuple[Artifact, ...] = ()
    details: Mapping[str, Any] = field(factory=dict, hash=False)


@checked
def fan_out(
    call: Callable[[_T], _U], items: Sequence[_T], *, max_workers: int | None = None, thread_prefix: str = "profwin"
) -> list[_U]:
    """``[call(item) for item in items]``, run concurrently (one thread per item, at most
    ``max_workers``), results in order: how backends drive several servers at once."""
    if len(items) <= 1:
        return [call(item) for item in items]
    # Imported here: it imports logging and threading, which listing the plugins does not need.
    from concurrent.futures import ThreadPoolExecutor

    workers = len(items) if max_workers is None else min(len(items), max_workers)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=thread_prefix) as pool:
        return list(pool.map(call, items))


class SpecFormat(Protocol):
    """A reader of another tool's config format, registered under :data:`SPEC_FORMATS_GROUP`.

    ``document`` is the whole document :func:`profwin.load_spec` read (a file's parsed content,
    an OmegaConf config, or plain data; an OmegaConf config whenever it holds interpolations and
    OmegaConf is installed), ``data`` the part at the dotted path ``at`` as plain
    dicts and lists. Return ``None`` when ``data`` is not this format (it is then read as a
    profwin spec), else the spec it means; raise :class:`profwin.ConfigError` (or
    :class:`profwin.ProfilingDisabled`) naming the key at fault. The module the entry point names
    is imported whenever a spec is loaded, so it must import nothing heavy.
    """

    def __call__(self, document: Any, data: Any, at: str | None) -> ProfileSpec | None: ...


@runtime_checkable
class Driver(Protocol):
    """One open profiler recording one window, created by :meth:`Profiler.open`.

    The session calls :meth:`advance` at every step boundary while the driver is open and
    :meth:`close` exactly once, when the window ends or the session closes early.
    """

    def advance(self, step: int) -> None:
        """Step ``step - 1`` has ended and step ``step`` begins."""

    def close(self, steps: Window | None, *, failed: bool) -> list[Artifact]:
        """Stop, write what was recorded and return the files.

        ``steps`` is the part of the window that actually ran (``None``: the window was never
        reached, e.g. the session closed during warm-up; write nothing). ``failed`` is true when
        the session closes because of an exception raised inside step ``steps.end - 1``.
        """


@runtime_checkable
class Profiler(Protocol):
    """An in-process profiler that :class:`profwin.Session` opens and closes on window edges."""

    name: str
    lead_steps: int
    """Steps before ``window.start`` the driver must be opened for warm-up (0 or 1)."""

    def check(self, spec: ProfileSpec) -> ProfileSpec:
        """Validate the spec for this machine; return it, possibly with activities dropped.

        Raise :class:`profwin.ConfigError` before any profiling starts.
        """

    def open(self, spec: ProfileSpec, *, window: Window, first_step: int, rank: int) -> Driver:
        """Open a driver at the start of step ``first_step`` (``window.start - lead_steps`` or 0).

        A profiler that can write a long window as consecutive part traces sets the class
        attribute ``writes_parts = True`` and takes a keyword ``part`` (a
        :class:`profwin.parts.Part`: the whole window, the part's number, the session id); the
        session then opens one driver per part, with ``window`` the part's own steps, and sizes
        the next part from the driver's ``recorded_events`` after its close, when it sets one
        (:mod:`profwin.parts`)."""


class ClusterReport(Protocol):
    """What :meth:`Cluster.collect` returns: ``ok`` when every node's files arrived."""

    @property
    def ok(self) -> bool: ...

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``profwin collect --json``)."""

    def render(self) -> str:
        """Text for a terminal, one line per node and per failed file."""


class CollectInterrupted(KeyboardInterrupt):
    """Ctrl-C during :meth:`Cluster.collect`: ``report`` says what arrived before it (kept, each
    file whole) and what did not."""

    def __init__(self, report: ClusterReport) -> None:
        super().__init__("interrupted")
        self.report = report


@runtime_checkable
class Cluster(Protocol):
    """Files on every node of a cluster without a shared disk (registered under
    :data:`CLUSTERS_GROUP`). The entry point's module must import nothing heavy."""

    def collect(
        self, pattern: str, dest: Path, *, address: str | None = None, chunk_bytes: int = 1 << 22, progress: bool = False
    ) -> ClusterReport:
        """Copy the files matching ``pattern`` on every node into ``dest/<node>/<file>``."""

    def summarize(
        self,
        paths: Sequence[str],
        *,
        address: str | None = None,
        window: Window | str | None = None,
        top: int = 20,
        first_step: int | None = None,
        session: str | None = None,
    ) -> Any:
        """Summarize ``paths`` on the nodes that hold them; the merged result is what
        ``profwin_traces.summarize`` (one file) or ``profwin_traces.summarize_ranks``
        (several) gives for the same files on one disk, the session chosen as there
        (``session``: an id or its prefix; default: each rank's newest, said so in a note)."""

    def deliver(self, paths: Sequence[str | Path], dest: str | Path) -> list[str]:
        """From inside a cluster worker: copy this node's ``paths`` into the folder ``dest`` on
        the node the driver runs on; return where they are there. Raises
        :class:`profwin.ConfigError` when a file could not be delivered whole."""

    def engine_target(self, actor: Any, engine: str, **options: Any) -> Any:
        """The engine object a cluster actor holds (OpenRLHF's ``RolloutRayActor.llm``), as an
        :class:`~profwin.plugin.engines.EngineTarget` of backend ``engine`` whose calls run in the actor:
        it plans with the engine version that runs there, lists and reads the engine's files on
        the actor's node (its ``listing``), and brings them to the caller's node."""
