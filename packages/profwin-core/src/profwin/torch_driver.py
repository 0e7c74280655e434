"""The built-in ``torch`` profiler: torch.profiler recording exactly the window's steps.

How it works, and why: docs/internals.md, ``profwin.torch_driver``.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import json
import os
import re
import sys
import time
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from profwin.activities import resolve_activities as resolve_activities_for
from profwin.arguments import checked
from profwin.atomic import atomic_path
from profwin.errors import ConfigError, PluginError, shown, unknown_key
from profwin.parts import Part, part_name
from profwin.protocols import Artifact, PluginSpec
from profwin.provenance import PROVENANCE_FORMAT, PROVENANCE_KEY, new_session_id, profwin_version
from profwin.spec import ProfileSpec
from profwin.window import Window

__all__ = ["PLUGIN", "STEP_MARKER", "TorchDriver", "TorchProfiler", "WindowedProfile", "inductor_left_alone", "trace_path"]

PLUGIN = PluginSpec(
    name="torch",
    kind="profiler",
    target="profwin.torch_driver:TorchProfiler",
    requires=("torch",),
    install_hint="profwin-core[torch] (or any torch build)",
    summary="torch.profiler over exactly the window's steps (Chrome/Perfetto trace)",
)

STEP_MARKER = "ProfilerStep#"
_FORMATS = {"json.gz": ".pt.trace.json.gz", "json": ".pt.trace.json"}
_OPTIONS = ("format",)


def _quiet_kineto() -> None:
    # Kineto logs every start and stop on stderr ("USDT: ... profiler_start") at its default
    # level, read once at its first use; the user's own setting wins.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")


def import_torch() -> Any:
    """Import torch or fail with what to install; Kineto is quietened before any profiler use."""
    _quiet_kineto()
    try:
        import torch
    except ImportError as exc:
        raise PluginError(
            f"the torch profiler needs torch, which is not importable ({exc}); install it with: pip install 'profwin-core[torch]'"
        ) from None
    return torch


@contextlib.contextmanager
def inductor_left_alone(torch: Any) -> Iterator[None]:
    """Around the start of a ``torch.profiler.profile``: torch's ``prepare_trace`` asks
    ``hasattr(torch, "_inductor")`` to read inductor's cudagraphs setting, and on torch's lazy
    module that question imports ``torch._inductor`` (with ``torch._dynamo`` and sympy): 3.3 CPU s
    of the first ``prepare_trace()`` in a process on torch 2.13 (docs/performance.md). Where
    inductor is not loaded, no graph of it has run and the answer is "no" without the import: the
    lazy module is hidden for the call. Where it is loaded, nothing changes."""
    lazy = getattr(torch, "_lazy_modules", None)
    if "torch._inductor" in sys.modules or not isinstance(lazy, set) or "_inductor" not in lazy:
        yield
        return
    lazy.discard("_inductor")
    try:
        yield
    finally:
        lazy.add("_inductor")


def resolve_activities(spec: ProfileSpec, torch: Any) -> tuple[str, ...]:
    """The activities to record: the spec's, or CPU plus the accelerator present.

    An activity the machine cannot record is a :class:`ConfigError` naming what was checked,
    or is dropped with a warning when ``spec.on_unavailable == "drop"``.
    """
    available = {
        "cpu": True,
        "cuda": bool(torch.cuda.is_available()),
        "xpu": bool(hasattr(torch, "xpu") and torch.xpu.is_available()),
    }
    why = f"torch {torch.__version__} reports torch.{{}}.is_available() == False on this machine"
    kept, _ = resolve_activities_for(
        spec,
        default=[a for a in ("cpu", "cuda", "xpu") if available[a]],
        unavailable={a: why.format(a) for a, ok in available.items() if not ok},
        refused={"npu": "is recorded by the 'npu' profiler (pip install profwin-npu), not 'torch'"},
    )
    return kept


def trace_path(spec: ProfileSpec, *, rank: int, steps: Window, suffix: str, part: Part | None = None) -> Path:
    """``{output_dir}/{prefix}_rank{rank}_w{start}-{end}.{time_ns}{suffix}``, or for a part of a
    long window ``{output_dir}/{part_name}.{time_ns}{suffix}`` (:func:`profwin.parts.part_name`).

    The shape ``name.<digits>.pt.trace.json[.gz]`` is what TensorBoard and Perfetto expect; the
    timestamp keeps two sessions of one process apart.
    """
    name = (
        f"{spec.prefix}_rank{rank}_{steps.slug()}" if part is None else part_name(spec.prefix, rank=rank, part=part, steps=steps)
    )
    return spec.output_dir / f"{name}.{time.time_ns()}{suffix}"


def _check_options(options: Mapping[str, Any]) -> str:
    for key in options:
        if key not in _OPTIONS:
            raise unknown_key(key, _OPTIONS, path="options.torch")
    fmt = options.get("format", "json.gz")
    if fmt not in _FORMATS:
        raise ConfigError(f"must be one of {list(_FORMATS)} (got {shown(fmt)})", path="options.torch.format")
    return str(fmt)


class TorchProfiler:
    """The ``torch`` entry of ``profwin.profilers``."""

    name = "torch"
    lead_steps = 1
    writes_parts = True

    def validate_options(self, options: Mapping[str, Any]) -> None:
        _check_options(options)

    def check(self, spec: ProfileSpec) -> ProfileSpec:
        _check_options(spec.plugin_options("torch"))
        return spec.replace(activities=resolve_activities(spec, import_torch()))

    def open(self, spec: ProfileSpec, *, window: Window, first_step: int, rank: int, part: Part | None = None) -> TorchDriver:
        return TorchDriver(spec, window=window, first_step=first_step, rank=rank, part=part)


# The WindowedProfile holding Kineto in this process: Kineto is one per process, and a second
# profiler prepared while one runs crashes it (a segfault, not an exception).
_kineto_owner: WindowedProfile | None = None


@checked
class WindowedProfile:
    """A ``torch.profiler.profile`` recording exactly a window's steps, for drivers to build on.

    Created when step ``first_step`` begins: it prepares the profiler (the warm-up, not
    recorded) and starts recording when step ``window.start`` begins; each recorded step ``k``
    is wrapped in ``record_function("ProfilerStep#k")``. The ``torch`` and ``memory`` profilers
    share it and differ only in what they write from :attr:`prof` after :meth:`stop`.

    One may be open per process, and none while the user's own torch.profiler runs: a second
    is a :class:`PluginError` naming the first, instead of Kineto crashing the process.
    """

    _window: Window

    def __init__(
        self,
        torch: Any,
        *,
        window: Window,
        first_step: int,
        metadata: Mapping[str, Any] | None = None,
        provenance: Mapping[str, Any] | None = None,
        **profile_kwargs: Any,
    ) -> None:
        global _kineto_owner
        from torch.profiler import profile

        if _kineto_owner is not None:
            raise PluginError(
                f"another profwin session is recording window {_kineto_owner._window} with torch.profiler in this "
                f"process; torch.profiler runs one session at a time, so window {window} cannot open now (nested sessions?)"
            )
        if torch.autograd.profiler._is_profiler_enabled:
            raise PluginError(
                f"a torch.profiler session is already running in this process; torch.profiler runs one session at a time, "
                f"so profwin cannot open window {window} inside it"
            )
        _quiet_kineto()
        self._torch = torch
        self._window = window
        self._metadata = dict(metadata or {})
        self._provenance = None if provenance is None else dict(provenance)
        self._marker: Any = None
        self.step = first_step
        """The step in progress (the last one :meth:`advance` began)."""
        self.recording = False
        self.prof = profile(**profile_kwargs)
        with inductor_left_alone(torch):
            self.prof.prepare_trace()
        _kineto_owner = self
        if first_step == window.start:
            # No warm-up step to enter a marker in (see _enter): pay the first record_function's
            # one-time costs here, before recording starts, rather than inside the first marker.
            with torch.autograd.profiler.record_function(f"{STEP_MARKER}{first_step}"):
                pass
        self._enter(first_step)

    def _enter(self, step: int) -> None:
        self.step = step
        if step == self._window.start:
            self.prof.start_trace()
            for key, value in self._metadata.items():
                # Top-level keys of the exported trace; Kineto accepts them only while recording.
                self.prof.add_metadata_json(key, json.dumps(value))
            if self._provenance is not None:
                # At the start, with the other metadata: added just before the stop, a write that
                # fails (a full disk, a file-size limit) left an empty trace instead of an error
                # (observed with torch 2.13). The steps recorded are the markers' own numbers.
                record = PROVENANCE_FORMAT.stamp({**self._provenance, "first_step": step})
                self.prof.add_metadata_json(PROVENANCE_KEY, json.dumps(record))
            self.recording = True
        # Every step gets its marker, the warm-up step too, as torch.profiler's own ``step()`` does:
        # before ``start_trace`` it is not recorded, but it pays the first ``record_function``'s
        # one-time costs (torch 2.13 imports ``torch.profiler._cupti_monitor`` there, tens of ms)
        # in the warm-up step instead of inside the first recorded step's marker.
        self._marker = self._torch.autograd.profiler.record_function(f"{STEP_MARKER}{step}")
        self._marker.__enter__()

    def _exit_marker(self) -> None:
        if self._marker is not None:
            marker, self._marker = self._marker, None
            marker.__exit__(None, None, None)

    def advance(self, step: int) -> None:
        """Step ``step - 1`` ended and step ``step`` begins."""
        self._exit_marker()
        self._enter(step)

    def release(self) -> None:
        """Free what torch.profiler recorded, once it is written. torch.profiler's objects hold
        reference cycles, so without this a part's recording lived on until Python's cyclic
        collector ran: the demo's RSS grew by ~130 MB a 300-step part, for six parts in a row."""
        self.prof.profiler = None

    def stop(self, steps: Window | None) -> bool:
        """Stop recording; true when ``steps`` (the part of the window that ran) is worth writing."""
        global _kineto_owner
        try:
            self._exit_marker()
            if not self.recording:
                # Closed during warm-up: finish the prepared Kineto session and write nothing, as
                # torch.profiler does when it exits in WARMUP.
                self.prof.start_trace()
            self.prof.stop_trace()
        finally:
            _kineto_owner = None
        return steps is not None  # None: no step of the window ran (e.g. closed right after entering)


class TorchDriver:
    """One torch.profiler session over one window (or one part of it), written as a Chrome trace."""

    recorded_events: int | None = None
    """Events in the trace written by :meth:`close` (``None`` before, or when nothing was written)."""

    def __init__(self, spec: ProfileSpec, *, window: Window, first_step: int, rank: int, part: Part | None = None) -> None:
        torch = import_torch()
        from torch.profiler import ProfilerActivity

        kinds = {
            "cpu": ProfilerActivity.CPU,
            "cuda": ProfilerActivity.CUDA,
            "xpu": getattr(ProfilerActivity, "XPU", None),
        }
        assert spec.activities is not None, "TorchProfiler.check resolves activities"
        self._spec = spec
        self._rank = rank
        self._part = part
        self._suffix = _FORMATS[_check_options(spec.plugin_options("torch"))]
        kwargs: dict[str, Any] = {
            "activities": [kinds[a] for a in spec.activities],
            "record_shapes": spec.shapes,
            "profile_memory": spec.memory,
            "with_stack": spec.stack,
            "with_flops": spec.flops,
        }
        if spec.modules:
            kwargs["with_modules"] = True
        origin = {"window": str(window if part is None else part.window), "engine": "torch",
                  "engine_version": str(torch.__version__), "producer": "torch", "rank": rank,
                  "session": new_session_id() if part is None else part.session, "version": profwin_version()}  # fmt: skip
        if part is not None:
            origin["part"] = part.index
        self.session: str = str(origin["session"])
        """The profiling session's id in the trace's provenance (a session timeline shares it)."""
        self._window = WindowedProfile(
            torch, window=window, first_step=first_step, metadata=_distributed_info(torch, rank), provenance=origin, **kwargs
        )

    def advance(self, step: int) -> None:
        self._window.advance(step)

    def close(self, steps: Window | None, *, failed: bool) -> list[Artifact]:
        if not self._window.stop(steps):
            return []
        assert steps is not None, "Session passes the part of the window that ran"
        assert steps.end is not None
        final = trace_path(self._spec, rank=self._rank, steps=steps, suffix=self._suffix, part=self._part)
        # After an early normal close, the marker of the step that would have followed was opened
        # at the last boundary but none of the loop's work ran in it: drop it so the trace holds
        # exactly `steps`.
        drop_from = steps.end if self._window.step >= steps.end else None
        try:
            size, self.recorded_events = _export_atomically(self._window.prof, final, drop_steps_from=drop_from)
        finally:
            self._window.release()
        return [Artifact(path=final, steps=steps, bytes=size, rank=self._rank, kind="trace", producer="torch")]


def _distributed_info(torch: Any, rank: int) -> dict[str, Any]:
    """``distributedInfo`` (rank, world size) for traces that torch would write without it: it
    adds its own only under an initialised torch.distributed. HTA and profwin read the rank there."""
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return {}
    world = os.environ.get("WORLD_SIZE", "")
    info: dict[str, Any] = {"rank": rank}
    if world.isascii() and world.isdigit():
        info["world_size"] = int(world)
    return {"distributedInfo": info}


def _export_atomically(prof: Any, final: Path, *, drop_steps_from: int | None) -> tuple[int, int]:
    """Export to a hidden temporary name in the same directory, then rename: a crash during
    export never leaves a truncated file under ``final``. Returns its size and its events."""
    gz = final.name.endswith(".gz")
    with atomic_path(final, suffix=".gz" if gz else "") as tmp:
        try:
            prof.export_chrome_trace(str(tmp))
            events = _check_complete(tmp, final, gz=gz)
            if drop_steps_from is not None:
                _drop_step_markers(tmp, drop_steps_from, gz=gz)
        finally:
            # torch's exporter writes through files of its own named after ours ("<tmp>.tmp",
            # renamed onto <tmp> when done); a write cut short (full disk, RLIMIT_FSIZE) leaves
            # them behind. Our hidden name is unique (name, pid), so its prefix finds only those.
            for leftover in tmp.parent.glob(glob.escape(tmp.name) + "?*"):
                leftover.unlink(missing_ok=True)
    return final.stat().st_size, events


# How a complete Chrome trace ends: the event array closed, then only "key": scalar pairs
# (Kineto's "traceName"), then the object closed.
_TRACE_END = re.compile(rb'\]\s*(?:,\s*"[^"\\]*"\s*:\s*(?:"[^"\\]*"|[-+.\w]+)\s*)*\}\s*$')
# A JSON string (no raw newline can stand in one), whose brackets are text, not structure.
_JSON_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
# Past this much text without a newline the brackets are no longer counted (the end still is):
# Kineto writes a line per field, so only a foreign exporter gets here.
_MAX_LINE = 16 << 20


class _Structure:
    """The brackets of a JSON text outside its strings, counted chunk by chunk in C-level
    operations (``re.sub``, ``bytes.count``), and its last 4 KiB.

    Why counting is the whole check: Kineto writes through a ``std::ofstream``, which writes
    nothing more once one write has failed, so a failed export is a *prefix* of the trace — and
    every proper prefix of a JSON document leaves a bracket open, whatever its last bytes are
    (a cut right after an event's ``"Input Dims": [[1]]}`` ends like a whole trace).
    """

    def __init__(self) -> None:
        self.depth = 0
        self.open_string = False
        self.counted = True
        self._line = b""
        self.tail = b""
        self.events = 0
        """Events seen: each has one ``"ph"`` key (inside a string it would be ``\\"ph\\"``)."""

    def feed(self, chunk: bytes, *, last: bool = False) -> None:
        self.tail = (self.tail + chunk)[-4096:]
        self.events += chunk.count(b'"ph"')
        if not self.counted:
            return
        text = self._line + chunk
        cut = len(text) if last else text.rfind(b"\n") + 1
        self._line = text[cut:]
        if len(self._line) > _MAX_LINE:
            self.counted = False
        body = _JSON_STRING.sub(b"", text[:cut])
        self.depth += body.count(b"{") + body.count(b"[") - body.count(b"}") - body.count(b"]")
        self.open_string = self.open_string or b'"' in body  # cut inside a string

    def complete(self) -> bool:
        self.feed(b"", last=True)
        whole = not self.counted or (self.depth == 0 and not self.open_string)
        return whole and _TRACE_END.search(self.tail) is not None


def _check_complete(tmp: Path, final: Path, *, gz: bool) -> int:
    """The events in the trace; a :class:`ConfigError` naming ``final`` unless torch wrote it whole.

    torch's exporter (C++) does not report a failed write: on a full disk or under a file-size
    limit (``RLIMIT_FSIZE``) it leaves a file cut short, and with ``.gz`` it compresses that cut
    file without complaint. The whole text is read back (decompressed, CRC checked) and its
    structure counted (:class:`_Structure`).
    """
    structure = _Structure()
    opener: Any = gzip.open if gz else open
    try:
        with opener(tmp, "rb") as f:
            while chunk := f.read(1 << 20):
                structure.feed(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise ConfigError(f"cannot write {str(final)!r}: the trace torch wrote cannot be read back ({exc})") from None
    if not structure.complete():
        raise ConfigError(
            f"cannot write {str(final)!r}: torch wrote a trace cut short (it does not end like a complete trace): "
            "is the disk full, or a file-size limit (ulimit -f) in force?"
        )
    return structure.events


def _drop_step_markers(path: Path, first_dropped: int, *, gz: bool) -> None:
    opener: Any = gzip.open if gz else open
    with opener(path, "rt", encoding="utf-8") as f:
        trace = json.load(f)

    def keep(event: Mapping[str, Any]) -> bool:
        name = event.get("name", "")
        if not (isinstance(name, str) and name.startswith(STEP_MARKER)):
            return True
        number = name[len(STEP_MARKER) :]
        return not (number.isdigit() and int(number) >= first_dropped)

    before = len(trace.get("traceEvents", []))
    trace["traceEvents"] = [e for e in trace.get("traceEvents", []) if keep(e)]
    if len(trace["traceEvents"]) == before:
        return
    with opener(path, "wt", encoding="utf-8") as f:
        json.dump(trace, f)
