"""The CUDA driver: the caching allocator's history over exactly the window, as a memory_viz pickle.

History recording is switched on (with the ring buffer cleared, where torch can) when step
``start`` begins and the snapshot is dumped, then recording switched off, when the window ends or
the session closes early. Each allocation made in the window is tagged with
``_set_memory_metadata("profwin step K")`` where torch has it, so memory_viz shows the step of
every block. Blocks allocated before the window still appear in ``segments`` (the allocator's
state at dump time), but without history entries.
"""

from __future__ import annotations

import inspect
import os
import platform
from typing import Any

from profwin.plugin import Artifact, ProfileSpec, Window, checked
from profwin.plugin.files import atomic_path
from profwin_memory import provenance
from profwin_memory.naming import artifact_path
from profwin_memory.options import MemoryOptions

__all__ = ["SNAPSHOT_SUFFIX", "STEP_METADATA", "CudaSnapshotDriver", "history_kwargs"]

SNAPSHOT_SUFFIX = ".memory_snapshot.pickle"
STEP_METADATA = "profwin step "
"""Prefix of the allocation metadata that names the step an allocation was made in."""


@checked
def history_kwargs(record_history: Any, options: MemoryOptions, *, enabled: str | None) -> dict[str, Any]:
    """Arguments for ``_record_memory_history`` that the installed torch accepts.

    ``clear_history`` (torch >= 2.5) empties the ring buffer so a second window in one process
    does not inherit the first one's events.
    """
    wanted: dict[str, Any] = {"enabled": enabled}
    if enabled is not None:
        wanted.update(context=options.context, stacks=options.stacks, max_entries=options.max_entries, clear_history=True)
    accepted = inspect.signature(record_history).parameters
    return {name: value for name, value in wanted.items() if name in accepted}


class CudaSnapshotDriver:
    """One window of CUDA allocator history (see the module docstring)."""

    def __init__(
        self, torch: Any, spec: ProfileSpec, options: MemoryOptions, *, window: Window, first_step: int, rank: int
    ) -> None:
        self._torch = torch
        self._memory = torch.cuda.memory
        self._spec = spec
        self._options = options
        self._window = window
        self._rank = rank
        self._recording = False
        self._tags = hasattr(self._memory, "_set_memory_metadata")
        self.advance(first_step)

    def advance(self, step: int) -> None:
        if step == self._window.start:
            record = self._memory._record_memory_history
            record(**history_kwargs(record, self._options, enabled="all"))
            self._recording = True
        if self._recording and self._tags:
            self._memory._set_memory_metadata(f"{STEP_METADATA}{step}")

    def close(self, steps: Window | None, *, failed: bool) -> list[Artifact]:
        if not self._recording:
            return []
        if steps is None:  # recording began with the step the session closed in: nothing ran
            self._stop_recording()
            return []
        final = artifact_path(self._spec, rank=self._rank, steps=steps, suffix=SNAPSHOT_SUFFIX)
        with atomic_path(final) as tmp:
            try:
                # Frees wait for their stream; synchronising first lets them reach the history.
                self._torch.cuda.synchronize()
                self._memory._dump_snapshot(str(tmp))
            finally:
                self._stop_recording()
            provenance.sign(tmp, final_name=final.name, details=self._details(steps))
        return [
            Artifact(
                path=final, steps=steps, bytes=final.stat().st_size, rank=self._rank, kind="memory-snapshot", producer="memory"
            )
        ]

    def _stop_recording(self) -> None:
        self._recording = False
        if self._tags:
            self._memory._set_memory_metadata("")
        record = self._memory._record_memory_history
        record(**history_kwargs(record, self._options, enabled=None))

    def _details(self, steps: Window) -> dict[str, Any]:
        return {
            "steps": str(steps),
            "window": str(self._window),
            "rank": self._rank,
            "pid": os.getpid(),
            "host": platform.node(),
            "torch": str(self._torch.__version__),
            "device": int(self._torch.cuda.current_device()),
            "max_entries": self._options.max_entries,
        }
