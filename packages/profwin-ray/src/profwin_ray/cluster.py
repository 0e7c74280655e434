"""Collection and in-place summaries over Ray: node-affinity tasks, the caller merges.

Every node alive in the cluster is asked, with a task pinned to it
(``NodeAffinitySchedulingStrategy(node_id, soft=False)``, ``num_cpus=0`` so a node whose CPUs
are busy with the rollout still answers):

- :func:`collect`: the node lists the files that match and their checksums; the caller then
  pulls each file one chunk per task, two tasks in flight, writing it under a hidden name and
  renaming it into place once the whole file arrived with the listed checksum. Memory on both
  sides is bounded by the chunk size, not the file size. Nodes are copied concurrently (a thread
  each on the caller), files of one node one after the other.
- :func:`summarize`: the node summarizes each trace it holds (profwin's streaming summary) and
  only the summary travels; the caller merges them as ``profwin summarize`` would.

Every failure is one node's (or one file's) clear result: a node task never raises
(:func:`profwin_ray.files.reported` returns its reason as one line), Ray's own failures are named
by their kind without the traceback their text carries, and the answers of tasks still in flight
after a failure are collected, so Ray prints no "unhandled error" dump on stderr. ``chunk_bytes``
is bounded (:data:`MIN_CHUNK` to :data:`MAX_CHUNK`), and an address where nothing answers fails
within :data:`CONNECT_S` instead of Ray's endless retries.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from attrs import define, field, frozen

from profwin.plugin import CollectInterrupted, ConfigError, Window, shown, to_json
from profwin_ray import files as node
from profwin_ray.files import FileChanged, NodeFile, Receiver
from profwin_traces import Ranks, Summary, TraceError, TraceFacts, choose_session, join_parts, merge_ranks


def _ray_failure(exc: BaseException) -> str:
    """Ray's failure in a few words: its kind and its text's first line (which never holds the
    traceback that follows it)."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first[:200]}" if first else type(exc).__name__


__all__ = ["Collection", "FileResult", "NodeResult", "collect", "connect", "deliver", "pull", "summarize"]

DEFAULT_CHUNK = 1 << 22  # 4 MiB: large enough that per-task overhead is small, small enough to bound memory
MIN_CHUNK = 1 << 10
MAX_CHUNK = 1 << 30
"""The bounds of ``chunk_bytes`` (1 KiB to 1 GiB): two chunks per node are in memory at once."""
CONNECT_S = 10.0
"""How long the cluster's address may take to accept a connection before ``connect`` gives up."""
_IN_FLIGHT = 2  # chunk tasks per file at once: one being written, one being read
_STALL_S = 60.0  # no chunk for this long from a node that Ray still calls alive: give up on it
_DRAIN_S = 2.0  # after a failure, how long the chunks still in flight may take to be collected
_P = ParamSpec("_P")
_T = TypeVar("_T")


# -- results ---------------------------------------------------------------------------------


@frozen
class FileResult:
    """One file of one node: ``copied``, ``skipped`` (already there with the same checksum),
    ``failed`` (``message`` says why) or ``not copied`` (the node failed or Ctrl-C came first)."""

    name: str
    status: str
    bytes: int
    sha256: str = ""
    path: str = ""
    """Where it is on the caller (copied or skipped); ``""`` otherwise."""
    message: str = ""


@define
class NodeResult:
    """One node's share: ``ok`` when every file it listed is on the caller."""

    node: str
    node_id: str
    files: list[FileResult] = field(factory=list)
    message: str = ""
    bytes_moved: int = 0

    @property
    def ok(self) -> bool:
        return not self.message and all(f.status in ("copied", "skipped") for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {**to_json(self, exclude=("files",)), "ok": self.ok, "files": [to_json(f) for f in self.files]}


@define
class Collection:
    """What :func:`collect` did, per node (``profwin collect`` prints it)."""

    dest: str
    pattern: str
    nodes: list[NodeResult]
    interrupted: bool = False
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.interrupted and all(n.ok for n in self.nodes)

    @property
    def bytes_moved(self) -> int:
        return sum(n.bytes_moved for n in self.nodes)

    def to_dict(self) -> dict[str, Any]:
        return {
            **to_json(self, exclude=("nodes", "wall_s")),
            "ok": self.ok,
            "bytes_moved": self.bytes_moved,
            "wall_s": round(self.wall_s, 3),
            "nodes": [n.to_dict() for n in self.nodes],
        }

    def render(self) -> str:
        lines = []
        for n in self.nodes:
            counts = {s: sum(f.status == s for f in n.files) for s in ("copied", "skipped", "failed", "not copied")}
            done = ", ".join(f"{v} {k}" for k, v in counts.items() if v) or "no files"
            head = f"{n.node}: {'ok' if n.ok else 'FAILED'} - {done}, {n.bytes_moved:,} bytes moved"
            lines.append(head + (f"; {n.message}" if n.message else ""))
            lines += [f"  {f.name}: {f.status}: {f.message}" for f in n.files if f.message]
        tail = "interrupted: files that arrived are kept whole; run again to copy the rest" if self.interrupted else ""
        lines.append(f"{self.dest}: {self.bytes_moved:,} bytes in {self.wall_s:.1f} s" + (f"; {tail}" if tail else ""))
        return "\n".join(lines)


# -- Ray -------------------------------------------------------------------------------------


def connect(address: str | None) -> Any:
    """The ``ray`` module, connected: to ``address`` (``"auto"``: the cluster this machine is part
    of), unless this process is already connected (a driver calling profwin)."""
    try:
        import ray
    except ImportError as exc:  # profwin-ray installed without its dependency
        raise ConfigError(f"profwin-ray needs ray: pip install 'profwin[ray]' ({exc})", path="ray") from None
    if not ray.is_initialized():
        # Ray would start this job's workers with the `uv run` that started this process, if
        # any (RAY_ENABLE_UV_RUN_RUNTIME_ENV): profwin's tasks need the nodes' own profwin-ray,
        # not the caller's project. A value the user set wins.
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        _check_reachable(address or "auto")
        try:
            ray.init(address=address or "auto", logging_level="WARNING", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"cannot connect to the Ray cluster at {address or 'auto'!r}: {exc}", path="ray") from None
    return ray


def _leaves_ray_as_found(fn: Callable[_P, _T]) -> Callable[_P, _T]:
    """``fn``, disconnecting from Ray after it when it connected (a process that was not a Ray
    driver before is not one after). A driver left connected keeps a thread of Ray's that prints
    on ``sys.stdout`` when it likes (a node it marked dead), also after ``profwin collect --json``
    printed its document, before the process exits."""

    @functools.wraps(fn)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        ray = sys.modules.get("ray")
        was_connected = ray is not None and ray.is_initialized()
        try:
            return fn(*args, **kwargs)
        finally:
            ray = sys.modules.get("ray")
            if not was_connected and ray is not None and ray.is_initialized():
                ray.shutdown()  # stops and joins that thread

    return call


def _check_reachable(address: str) -> None:
    """Fail within :data:`CONNECT_S` when nothing accepts a connection at the cluster's address:
    ``ray.init`` itself retries for ever there (Ray 2.60: a 30 s wait for the GCS, again and
    again). ``auto`` is resolved as Ray resolves it (``RAY_ADDRESS``, then the cluster last
    started on this machine); with none, Ray's own error says so."""
    import socket

    from ray._private.services import canonicalize_bootstrap_address

    where = address.removeprefix("ray://")
    try:
        if not address.startswith("ray://"):
            where = canonicalize_bootstrap_address(address) or ""
    except (ConnectionError, RuntimeError, ValueError):
        return  # no address to try: ray.init says why, at once
    host, _, port = where.rpartition(":")
    if not where or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_S):
            pass
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise ConfigError(
            f"cannot connect to the Ray cluster at {address!r}: nothing answers at {where} ({why}); "
            "is the cluster running (ray status), and is this its address?",
            path="ray",
        ) from None


def _alive_nodes(ray: Any) -> list[tuple[str, str]]:
    """``(name, node_id)`` of every alive node, named by address, plus the node id's first 8
    characters where several nodes share an address (several raylets on one machine)."""
    alive = sorted((n["NodeManagerAddress"], n["NodeID"]) for n in ray.nodes() if n["Alive"])
    addresses = [a for a, _ in alive]
    return [(a if addresses.count(a) == 1 else f"{a}-{i[:8]}", i) for a, i in alive]


def _on(ray: Any, node_id: str, fn: Callable[..., Any], **options: Any) -> Any:
    """``fn`` as a task pinned to the node, answering ``(ok, value or why)`` (:func:`node.reported`)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
    return ray.remote(node.reported(fn)).options(scheduling_strategy=strategy, num_cpus=0, max_retries=0, **options)


def check_chunk_bytes(chunk_bytes: object) -> int:
    """``chunk_bytes`` if it is an integer from :data:`MIN_CHUNK` to :data:`MAX_CHUNK`; else a
    :class:`ConfigError` (the one check for :func:`collect` and :func:`deliver`)."""
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int) or not MIN_CHUNK <= chunk_bytes <= MAX_CHUNK:
        raise ConfigError(
            f"must be an integer number of bytes from {MIN_CHUNK:,} to {MAX_CHUNK:,} (got {shown(chunk_bytes)})",
            path="chunk_bytes",
        )
    return chunk_bytes


class _Cancelled(Exception):
    """Ctrl-C reached the caller: stop after the chunk in hand."""


class _NodeFailed(Exception):
    """The node itself failed (died, or stopped answering): its other files cannot come."""


class _TaskFailed(Exception):
    """A task on the node raised (its one-line reason): that task's file, not the node, failed."""


def _answer(ray: Any, ref: Any, node_id: str, *, cancel: threading.Event | None = None, stall_s: float | None = None) -> Any:
    """What the task ``ref`` on node ``node_id`` returned, watching for Ctrl-C (``cancel``), for
    the node dying, and (``stall_s``) for an answer that never comes from a node Ray still calls
    alive. A task that raised is :class:`_TaskFailed` with its one-line reason
    (:func:`node.reported`); Ray's own failure (a worker or the node died, the answer was lost)
    is :class:`_NodeFailed`, named by its kind, never with the traceback Ray's text carries."""
    exceptions = ray.exceptions
    began = time.monotonic()
    while True:
        if cancel is not None and cancel.is_set():
            raise _Cancelled
        try:
            ok, value = ray.get(ref, timeout=0.5)
        except exceptions.GetTimeoutError:
            pass
        except exceptions.RayError as exc:  # the node or its worker died, the object was lost
            raise _NodeFailed(f"the node failed ({_ray_failure(exc)})") from None
        else:
            if not ok:
                raise _TaskFailed(value)
            return value
        if time.monotonic() - began > 2.0 and node_id not in {i for _, i in _alive_nodes(ray)}:
            raise _NodeFailed("the node died (Ray lists it dead)")
        if stall_s is not None and time.monotonic() - began > stall_s:
            raise _NodeFailed(f"no answer from the node for {stall_s:.0f} s")


class _Progress:
    """One line on stderr, rewritten in place, with every node's files and bytes so far."""

    def __init__(self, names: Sequence[str], enabled: bool) -> None:
        self.enabled = enabled
        self.state = {n: [0, 0, 0] for n in names}  # files done, files listed, bytes
        self.lock = threading.Lock()
        self.shown = 0.0

    def update(self, name: str, *, done: int = 0, listed: int = 0, moved: int = 0) -> None:
        if not self.enabled:
            return
        with self.lock:
            state = self.state[name]
            state[0] += done
            state[1] += listed
            state[2] += moved
            now = time.monotonic()
            if now - self.shown >= 0.2 or done:
                self.shown = now
                line = " | ".join(f"{n} {d}/{t} files {b / 1e6:.1f} MB" for n, (d, t, b) in self.state.items())
                sys.stderr.write(f"\rcollect: {line}\x1b[K")
                sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")


@define
class _Copy:
    ray: Any
    dest: Path
    chunk_bytes: int
    cancel: threading.Event
    progress: _Progress
    manifest: dict[str, dict[str, Any]]
    per_node: bool = True
    """Files land in ``dest/<node>/``; else in ``dest`` itself (:func:`deliver`)."""
    lock: threading.Lock = field(factory=threading.Lock)

    def _get(self, ref: Any, node_id: str, stall_s: float | None = _STALL_S) -> Any:
        return _answer(self.ray, ref, node_id, cancel=self.cancel, stall_s=stall_s)

    def _chunks(self, read: Any, file: NodeFile, node_id: str) -> Any:
        offsets = list(range(0, file.bytes, self.chunk_bytes))
        pending = [read.remote(file, o, self.chunk_bytes) for o in offsets[:_IN_FLIGHT]]
        try:
            for i in range(len(offsets)):
                # The chunk awaited stays pending until it arrives, so a failure or Ctrl-C while
                # it is awaited drains it with the others.
                chunk = self._get(pending[0], node_id)
                pending.pop(0)
                if i + _IN_FLIGHT < len(offsets):
                    pending.append(read.remote(file, offsets[i + _IN_FLIGHT], self.chunk_bytes))
                yield chunk
        finally:
            self._drain(pending)

    def _drain(self, pending: list[Any]) -> None:
        """Collect the answers of the chunk tasks still in flight after a failure or Ctrl-C: Ray
        prints an "unhandled error" dump on the caller's stderr for every task that fails with
        nobody asking for its answer, even one whose reference was dropped while it ran (its
        answer is kept until the task ends). A task that has not answered within
        :data:`_DRAIN_S` (a read stuck on the node, or one that would fail only when this
        process leaves and Ray ends its workers) is cancelled, which ends its worker, and that
        answer is collected too, within :data:`_DRAIN_S` more."""
        if not pending:
            return
        ready, waiting = self.ray.wait(pending, num_returns=len(pending), timeout=_DRAIN_S)
        for ref in waiting:
            with contextlib.suppress(Exception):
                self.ray.cancel(ref, force=True)
        if waiting:
            ended, _ = self.ray.wait(waiting, num_returns=len(waiting), timeout=_DRAIN_S)
            ready += ended
        for ref in ready:
            with contextlib.suppress(Exception):
                self.ray.get(ref, timeout=0)

    def node(self, name: str, node_id: str, pattern: str) -> NodeResult:
        result = NodeResult(node=name, node_id=node_id)
        try:
            # No stall limit: the node reads every file it lists for its checksum, which takes as
            # long as its disk needs; only its death ends the wait.
            listed: list[NodeFile] = self._get(_on(self.ray, node_id, node.list_files).remote(pattern), node_id, None)
        except (_NodeFailed, _TaskFailed) as exc:
            result.message = f"could not list its files: {exc}"
            return result
        except _Cancelled:
            result.message = "interrupted before its files were listed"
            return result
        self.progress.update(name, listed=len(listed))
        read = _on(self.ray, node_id, node.read_chunk)
        for i, file in enumerate(listed):
            key = f"{name}/{file.name}"
            try:  # a link or anything else planted in the destination refuses this file only
                final = node.destination(self.dest, key if self.per_node else file.name)
            except ConfigError as exc:
                result.files.append(FileResult(file.name, "failed", 0, message=str(exc)))
                self.progress.update(name, done=1)
                continue
            if node.already_collected(final, key, file, self.manifest):
                result.files.append(FileResult(file.name, "skipped", file.bytes, file.sha256, str(final)))
                self.progress.update(name, done=1)
                continue
            receiver = Receiver(final, file)
            try:
                receiver.write_all(self._chunks(read, file, node_id))
            except (FileChanged, _TaskFailed) as exc:
                result.files.append(FileResult(file.name, "failed", receiver.received, message=str(exc)))
                result.bytes_moved += receiver.received
                continue
            except (ConfigError, OSError) as exc:  # written here: the destination refused it (a disk full, a folder planted)
                why = str(exc) if isinstance(exc, ConfigError) else f"cannot write it: {exc.strerror or exc}"
                result.files.append(FileResult(file.name, "failed", receiver.received, message=why))
                result.bytes_moved += receiver.received
                continue
            except (_NodeFailed, _Cancelled) as exc:
                result.bytes_moved += receiver.received
                why = str(exc) if isinstance(exc, _NodeFailed) else "interrupted"
                result.message = why
                result.files.append(FileResult(file.name, "failed", receiver.received, message=f"{why}; nothing kept of it"))
                result.files += [FileResult(f.name, "not copied", f.bytes, message=why) for f in listed[i + 1 :]]
                return result
            result.bytes_moved += receiver.received
            info = final.stat()
            with self.lock:
                self.manifest[key] = {"sha256": file.sha256, "bytes": info.st_size, "mtime_ns": info.st_mtime_ns}
            result.files.append(FileResult(file.name, "copied", file.bytes, file.sha256, str(final)))
            self.progress.update(name, done=1, moved=receiver.received)
        return result


@_leaves_ray_as_found
def collect(
    pattern: str,
    dest: str | Path,
    *,
    address: str | None = None,
    chunk_bytes: int = DEFAULT_CHUNK,
    progress: bool = False,
) -> Collection:
    """Copy the files matching ``pattern`` on every alive node into ``dest/<node>/<file>``.

    ``pattern`` is a path on the nodes: a glob (``**`` for any depth) or a folder (its files).
    Each file arrives whole with the checksum the node computed, or not at all; a file already in
    ``dest`` with that checksum is skipped. A node that dies, or a file removed or changed while
    it is copied, is that node's failed result; the other nodes and the files that arrived are
    kept. Ctrl-C raises :class:`profwin.plugin.CollectInterrupted` holding the results so far.
    """
    check_chunk_bytes(chunk_bytes)
    if not isinstance(pattern, str) or not pattern.strip():
        raise ConfigError(f"must be a path or glob on the nodes (got {shown(pattern)})", path="pattern")
    began = time.monotonic()
    target = Path(dest)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot make the folder {str(target)!r}: {exc.strerror or exc}", path="to") from None
    node.check_manifest(target)
    ray = connect(address)
    nodes = _alive_nodes(ray)
    progress_line = _Progress([n for n, _ in nodes], progress)
    copy = _Copy(ray, target, chunk_bytes, threading.Event(), progress_line, node.load_manifest(target))
    interrupted = False
    with ThreadPoolExecutor(max_workers=max(1, len(nodes)), thread_name_prefix="profwin-collect") as pool:
        futures = [pool.submit(copy.node, name, node_id, pattern) for name, node_id in nodes]
        try:
            while not all(f.done() for f in futures):
                wait(futures, timeout=0.2, return_when=FIRST_EXCEPTION)  # short: Ctrl-C lands here
        except KeyboardInterrupt:
            interrupted = True
            copy.cancel.set()
            wait(futures)
    progress_line.close()
    results = [f.result() for f in futures]
    node.save_manifest(target, copy.manifest)
    collection = Collection(str(target), pattern, results, interrupted, time.monotonic() - began)
    if interrupted:
        raise CollectInterrupted(collection)
    return collection


# -- summarize where the traces are ------------------------------------------------------------


@frozen
class Travelled:
    """What an in-place summary moved over the network (the answers' pickled bytes), and the work
    it left on each node: the CPU seconds of that node's summaries, measured there. Nodes do their
    share side by side, so on separate machines the summaries take about the largest share, not
    the sum (``benchmarks/scale_out_bench.py`` prints both)."""

    files: int
    bytes: int
    node_cpu_s: dict[str, float] = field(factory=dict)


@_leaves_ray_as_found
def summarize(
    paths: Sequence[str],
    *,
    address: str | None = None,
    window: Window | str | None = None,
    top: int = 20,
    first_step: int | None = None,
    session: str | None = None,
    travelled: list[Travelled] | None = None,
) -> Summary | Ranks:
    """``profwin summarize PATHS`` run on the nodes that hold the traces, merged here.

    ``paths`` are paths on the nodes (files, or folders of per-rank traces); a long window's part
    traces are summarized together on their node, as one trace. One file in all gives
    its :class:`Summary`, several give :class:`Ranks`, exactly as the same files on one disk
    would. A file found on several nodes with the same size and mtime (a shared disk) is read
    once. Traces of several profiling sessions are chosen among here as on one disk: ``session``
    (an id or its prefix), else each rank's newest, said so in a note; only the chosen traces are
    summarized. ``travelled``, when given, receives how many bytes of summaries came back.
    """
    import pickle

    ray = connect(address)
    nodes = _alive_nodes(ray)
    asked = [(name, i, _on(ray, i, node.resolve_traces).remote(list(paths))) for name, i in nodes]
    listings = [_on_node_answer(ray, ref, name, node_id, "could not list its traces") for name, node_id, ref in asked]
    seen: set[tuple[str, int, int]] = set()
    found: list[tuple[int, TraceFacts, str, str]] = []  # (index of path given, the trace, node name, node id)
    in_folder = False
    for (name, node_id), listing in zip(nodes, listings, strict=True):
        for index, size, folder, facts in listing:
            if (facts.path, size, facts.mtime_ns) not in seen:
                seen.add((facts.path, size, facts.mtime_ns))
                found.append((index, facts, name, node_id))
                in_folder |= folder
    if not found:
        raise TraceError(", ".join(paths), f"not found on any of the {len(nodes)} Ray node(s)")
    found.sort(key=lambda f: (f[0], f[1].path, f[2]))
    one = len(paths) == 1 and len(found) == 1 and not in_folder
    chosen, notes = choose_session([facts for _, facts, _, _ in found], session)
    if not one:  # one trace is summarized as it is (once its session was checked)
        found = [f for f in found if any(f[1] is c for c in chosen)]
    else:
        notes = []
    # A long window's parts are summarized together, as one trace, on the node that holds them.
    where = {id(facts): (name, node_id) for _, facts, name, node_id in found}
    units = join_parts([facts for _, facts, _, _ in found])
    for unit in units:
        nodes_of = {where[id(f)] for f in unit}
        if len(nodes_of) > 1:
            raise TraceError(
                unit[0].path, f"the parts of window {unit[0].window} are on several nodes ({sorted(n for n, _ in nodes_of)}); "
                "collect them into one folder first (profwin collect --ray)"
            )  # fmt: skip
    found = [(0, unit[0], *where[id(unit[0])]) for unit in units]
    # The part files of one window, given one by one, are one trace, as on one disk.
    one = one or (not in_folder and len(units) == 1 and len(units[0]) == len(paths) > 1)
    refs = [
        _on(ray, node_id, node.summarize_one).remote(
            [f.path for f in unit] if len(unit) > 1 else unit[0].path, window, top, first_step
        )
        for unit, (_, _, _, node_id) in zip(units, found, strict=True)
    ]
    answers = [
        _on_node_answer(ray, ref, f"{name}:{facts.path}", node_id, "could not summarize it")
        for ref, (_, facts, name, node_id) in zip(refs, found, strict=True)
    ]
    if travelled is not None:
        cpu: dict[str, float] = {}
        for (_, _, name, _), answer in zip(found, answers, strict=True):
            cpu[name] = cpu.get(name, 0.0) + answer[2]
        travelled.append(Travelled(len(answers), sum(len(pickle.dumps(a)) for a in answers), cpu))
    summaries: list[Summary] = []
    for (_, facts, name, _), (status, value, _) in zip(found, answers, strict=True):
        if status == "error":
            raise TraceError(f"{name}:{facts.path}", value)
        if status == "ok":
            summaries.append(value)
        else:  # as summarize_ranks says it for a file without steps
            notes.append(f"{os.path.basename(facts.path)}: no step markers; left out")
    if one:
        (status, value, _), (_, facts, name, _) = answers[0], found[0]
        if status == "no steps":  # one trace, as ``profwin summarize FILE`` says it
            raise TraceError(f"{name}:{facts.path}", value)
        return value  # type: ignore[no-any-return]
    if not summaries:
        raise TraceError(", ".join(paths), "no trace with step markers")
    return merge_ranks(summaries, notes=notes)


def _on_node_answer(ray: Any, ref: Any, where: str, node_id: str, what: str) -> Any:
    """:func:`_answer` for a summary: a failure is a :class:`TraceError` naming the node (or the
    file on it) and what could not be done."""
    try:
        return _answer(ray, ref, node_id)
    except (_TaskFailed, _NodeFailed) as exc:
        raise TraceError(where, f"{what}: {exc}") from None


# -- deliver: from a worker's node to the head node ----------------------------------------------


def _head_node(ray: Any) -> str:
    heads = [n["NodeID"] for n in ray.nodes() if n["Alive"] and "node:__internal_head__" in n["Resources"]]
    if not heads:
        raise ConfigError("the Ray cluster has no alive head node to deliver to", path="ray")
    return str(heads[0])


def deliver(paths: Sequence[str | Path], dest: str | Path, *, chunk_bytes: int = DEFAULT_CHUNK) -> NodeResult:
    """Copy files of this node into the folder ``dest`` on the Ray head node (where the driver
    runs), for code running inside a Ray worker, such as a rollout replica relocating its traces
    when the nodes share no disk. On the head node itself nothing is copied. The files stay here
    too; each arrives whole with its checksum or not at all (the result says which)."""
    check_chunk_bytes(chunk_bytes)
    ray = connect(None)
    here = str(ray.get_runtime_context().get_node_id())
    head = _head_node(ray)
    files = [str(Path(p).absolute()) for p in paths]
    if here == head:
        return NodeResult(node="head", node_id=here, files=[FileResult(Path(f).name, "skipped", 0, path=f) for f in files])
    try:
        result: NodeResult = _answer(ray, _on(ray, head, _receive).remote(files, here, str(dest), chunk_bytes), head)
    except (_TaskFailed, _NodeFailed) as exc:
        return NodeResult(node="head", node_id=head, message=f"the head node could not receive the files: {exc}")
    return result


def _receive(files: list[str], source: str, dest: str, chunk_bytes: int) -> NodeResult:
    """On the head node: pull ``files`` from node ``source`` into ``dest``."""
    import ray

    return pull(ray, files, source, Path(dest), chunk_bytes)


def pull(ray: Any, files: Sequence[str], source: str, dest: Path, chunk_bytes: int = DEFAULT_CHUNK) -> NodeResult:
    """Copy the files ``files`` (paths on node ``source``) into the folder ``dest`` of the node
    this runs on, as :func:`collect` copies: whole with the checksum the node computed, or not at
    all; a file already in ``dest`` with that checksum is not copied again (``skipped``)."""
    dest.mkdir(parents=True, exist_ok=True)
    node.check_manifest(dest)
    copy = _Copy(ray, dest, chunk_bytes, threading.Event(), _Progress([], False), node.load_manifest(dest), per_node=False)
    result = NodeResult(node=source[:8], node_id=source)
    for file in files:
        one = copy.node(result.node, source, file)
        result.files += one.files
        result.bytes_moved += one.bytes_moved
        result.message = result.message or one.message
    node.save_manifest(dest, copy.manifest)
    return result
