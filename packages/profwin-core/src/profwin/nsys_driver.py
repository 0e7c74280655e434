"""The built-in ``nsys`` profiler: Nsight Systems' capture range over exactly the window's steps.

How it works, and why: docs/internals.md, ``profwin.nsys_driver``.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping
from typing import Any

import attrs
from attrs import frozen

from profwin.atomic import write_atomic
from profwin.errors import ConfigError, PluginError
from profwin.formats import Format
from profwin.options import flag, parse_options
from profwin.protocols import Artifact, PluginSpec
from profwin.spec import ProfileSpec
from profwin.window import Window

__all__ = ["CAPTURE_SUFFIX", "NVTX_STEP", "PLUGIN", "NsysDriver", "NsysOptions", "NsysProfiler"]

PLUGIN = PluginSpec(
    name="nsys",
    kind="profiler",
    target="profwin.nsys_driver:NsysProfiler",
    requires=("torch",),
    install_hint="torch with CUDA; run the program under nsys profile --capture-range=cudaProfilerApi",
    summary="Nsight Systems capture range (cudaProfilerStart/Stop) over exactly the window, an NVTX range per step",
)

NVTX_STEP = "profwin step "
"""The NVTX range name of each recorded step, followed by its index in the session."""
CAPTURE_SUFFIX = ".nsys-capture.json"
CAPTURE_FORMAT = Format("profwin.nsys-capture", version=1)
"""The capture note's format (``"format"``): what a reader of these notes checks first."""

# Capture ranges this process opened: nsys numbers its reports the same way under
# --capture-range-end=repeat.
_captures = itertools.count(1)

# What the CUDA profiler API cannot take: nsys decides what it traces (--trace=cuda,nvtx,...).
_NOT_FOR_NSYS = ("stack", "modules", "memory", "flops")


@frozen(kw_only=True)
class NsysOptions:
    """``options.nsys`` of a spec.

    Attributes:
        ops: also make every torch operator an NVTX range (``emit_nvtx``; costly, as in NeMo's
            nsys profiling), with input shapes when the spec's ``shapes`` is set.
    """

    ops: bool = attrs.field(default=False, validator=flag)


def nsys_options(source: ProfileSpec | Mapping[str, Any]) -> NsysOptions:
    return parse_options(NsysOptions, source, "nsys")


def _import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise PluginError(
            f"the nsys profiler needs torch with CUDA, which is not importable ({exc}); install a CUDA build of torch"
        ) from None
    return torch


class NsysProfiler:
    """The ``nsys`` entry of ``profwin.profilers``."""

    name = "nsys"
    lead_steps = 0  # cudaProfilerStart is a flag for the attached profiler: nothing to warm up

    def validate_options(self, options: Mapping[str, Any]) -> None:
        nsys_options(options)

    def check(self, spec: ProfileSpec) -> ProfileSpec:
        options = nsys_options(spec)
        if spec.activities is not None:
            raise ConfigError(
                f"nsys chooses what it traces itself (nsys profile --trace=cuda,nvtx,...); leave activities unset "
                f"(got {list(spec.activities)})",
                path="activities",
            )
        for name in _NOT_FOR_NSYS:
            if getattr(spec, name):
                raise ConfigError("is a torch.profiler setting; the nsys profiler does not take it", path=name)
        if spec.shapes and not options.ops:
            raise ConfigError("is recorded by the nsys profiler only with options.nsys.ops: true", path="shapes")
        torch = _import_torch()
        if not torch.cuda.is_available():
            raise ConfigError(
                f"the nsys profiler needs a CUDA device: torch {torch.__version__} reports torch.cuda.is_available() == "
                "False on this machine (use the 'torch' profiler here)",
                path="profiler",
            )
        return spec

    def open(self, spec: ProfileSpec, *, window: Window, first_step: int, rank: int) -> NsysDriver:
        return NsysDriver(_import_torch(), spec, nsys_options(spec), window=window, first_step=first_step, rank=rank)


class NsysDriver:
    """One capture range: opened when step ``window.start`` begins (docs/internals.md)."""

    def __init__(
        self, torch: Any, spec: ProfileSpec, options: NsysOptions, *, window: Window, first_step: int, rank: int
    ) -> None:
        self._torch = torch
        self._spec = spec
        self._rank = rank
        self._ops: Any = None
        self._pushed = False
        torch.cuda.synchronize()  # work queued before the window finishes outside the range
        torch.cuda.profiler.start()
        self._capture = next(_captures)
        if options.ops:
            self._ops = torch.autograd.profiler.emit_nvtx(record_shapes=spec.shapes)
            self._ops.__enter__()
        self.advance(first_step)

    def advance(self, step: int) -> None:
        nvtx = self._torch.cuda.nvtx
        if self._pushed:
            nvtx.range_pop()
        nvtx.range_push(f"{NVTX_STEP}{step}")
        self._pushed = True

    def close(self, steps: Window | None, *, failed: bool) -> list[Artifact]:
        torch = self._torch
        try:
            if self._pushed:
                torch.cuda.nvtx.range_pop()
                self._pushed = False
            if self._ops is not None:
                self._ops.__exit__(None, None, None)
            torch.cuda.synchronize()  # the window's last kernels complete inside the range
        finally:
            torch.cuda.profiler.stop()
        if steps is None:
            return []
        note = {
            "window": str(self._spec.window),
            "steps": str(steps),
            "rank": self._rank,
            "pid": os.getpid(),
            "capture_range": self._capture,
            "nvtx_step_prefix": NVTX_STEP,
            "failed": failed,
        }
        path = self._spec.output_dir / f"{self._spec.prefix}_rank{self._rank}_{steps.slug()}.pid{os.getpid()}{CAPTURE_SUFFIX}"
        data = json.dumps(CAPTURE_FORMAT.stamp(note), indent=1).encode()
        write_atomic(path, data)
        return [
            Artifact(path=path.absolute(), steps=steps, bytes=len(data), rank=self._rank, kind="nsys-capture", producer="nsys")
        ]
