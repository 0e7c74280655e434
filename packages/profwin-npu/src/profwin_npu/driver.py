"""The ``npu`` profiler: ``torch_npu.profiler.profile`` recording exactly the window's steps.

:class:`profwin.Session` decides when to open, advance and close; this module only maps that
onto torch_npu, the same way core's torch driver maps it onto torch.profiler:

* The driver opens one step early (``lead_steps = 1``) and hands torch_npu a schedule of one
  warm-up step then ``end - start`` active steps, so the expensive set-up happens in step
  ``start - 1``, outside the trace. A window starting at step 0 has no step to warm up in.
* torch_npu names its step markers ``ProfilerStep#<its step counter>``; the driver starts that
  counter at the session's step, so the markers carry the window's own numbers (and are also
  emitted as mstx ranges, visible on the device timeline).
* A long window is written in parts (``writes_parts``, :mod:`profwin.parts` in core): the
  session opens one driver per part, each a ``*_ascend_pt`` folder named after the window, the
  part number and its steps, so the folders of one window sort in order. torch_npu's events are
  not counted here, so only ``part_steps`` bounds a part.
* torch_npu never raises: it prints ``[ERROR]``/``[WARNING]`` lines and resets bad arguments.
  So every argument is passed by keyword, options are checked beforehand
  (:mod:`profwin_npu.options`), and on close the driver looks for the ``*_ascend_pt`` folder
  and raises :class:`profwin.PluginError` if torch_npu wrote none.
"""

from __future__ import annotations

import inspect
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from profwin.plugin import Artifact, PluginError, ProfileSpec, Window, checked, warn
from profwin.plugin import resolve_activities as core_resolve_activities
from profwin.plugin.files import Part, part_name
from profwin_npu.engines import engine_flavour
from profwin_npu.options import NpuOptions, npu_options

__all__ = [
    "ASCEND_SUFFIX",
    "MSPROF_ENV_VARS",
    "NpuDriver",
    "NpuProfiler",
    "ascend_dirs",
    "dir_size",
    "import_torch_npu",
    "profile_kwargs",
    "worker_name",
]

ASCEND_SUFFIX = "_ascend_pt"
MSPROF_ENV_VARS = ("PROFILER_SAMPLECONFIG", "PROFILING_MODE")
"""Set by the ``msprof`` command line; while either is set torch_npu's profiler API does nothing."""

# torch_npu's schedule has no "until stopped"; an active phase this long never ends in practice.
_UNBOUNDED_STEPS = 2**62
_LEVEL_NAMES = {"level_none": "Level_none", "level0": "Level0", "level1": "Level1", "level2": "Level2"}
_EXPORT_NAMES = {"text": "Text", "db": "Db"}


def import_torch_npu() -> Any:
    """Import ``torch_npu`` (with its profiler) or fail with what to install.

    A torch_npu wheel without the Ascend CANN libraries fails with ``ImportError: libhccl.so``,
    and makes ``import torch`` itself fail with a ``RuntimeError``; both become a
    :class:`profwin.PluginError` here.
    """
    try:
        import torch_npu
        import torch_npu.profiler
    except (ImportError, RuntimeError, OSError) as exc:
        raise PluginError(
            f"the npu profiler needs torch_npu, which is not importable ({type(exc).__name__}: {exc}). "
            "On an Ascend machine install the torch_npu build that matches your torch "
            "(pip install 'profwin-npu[engine]' or torch-npu==<your torch version>) and the Ascend CANN toolkit, "
            "then load it with: source /usr/local/Ascend/ascend-toolkit/set_env.sh"
        ) from None
    return torch_npu


def worker_name(spec: ProfileSpec, *, rank: int, window: Window, part: Part | None = None) -> str:
    """The name torch_npu puts first in the folder name: ``{prefix}_rank{rank}_w{start}-{end}``,
    or for a part of a long window ``{prefix}_rank{rank}_w{start}-{end}_part{k:04d}_s{first}-{end}``
    (the whole window, then the part's planned steps).

    torch_npu appends ``_{pid}_{timestamp}_ascend_pt``. The folder is created when recording is
    set up, before anyone knows where the session will end, so it carries the planned window;
    :attr:`profwin.Artifact.steps` says which steps it really holds.
    """
    if part is not None:
        return part_name(spec.prefix, rank=rank, part=part, steps=window)
    return f"{spec.prefix}_rank{rank}_{window.slug()}"


def _unique(output_dir: Path, worker: str) -> str:
    """``worker``, or ``worker-2``, ``-3``... when this process already wrote a folder of that name
    into ``output_dir``: torch_npu names it ``{worker}_{pid}_{time in ms}``, so two windows of the
    same name within one millisecond would collide ("File exists") and the second record nothing."""
    name, n = worker, 1
    while ascend_dirs(output_dir, name):
        n += 1
        name = f"{worker}-{n}"
    return name


def ascend_dirs(output_dir: Path, worker: str) -> list[Path]:
    """The ``{worker}_{pid}_{timestamp}_ascend_pt`` folders of this process under ``output_dir``."""
    return sorted(p for p in output_dir.glob(f"{worker}_{os.getpid()}_*{ASCEND_SUFFIX}") if p.is_dir())


def dir_size(path: Path) -> int:
    """Bytes of all files under ``path``."""
    return sum((Path(root) / name).stat().st_size for root, _, names in os.walk(path) for name in names)


def resolve_activities(spec: ProfileSpec, *, npu_available: bool) -> tuple[str, ...]:
    """The activities to record: the spec's, or CPU plus the NPU when one is present."""
    kept, _ = core_resolve_activities(
        spec,
        default=("cpu", "npu") if npu_available else ("cpu",),
        unavailable={} if npu_available else {"npu": "torch_npu.npu.is_available() is False on this machine"},
        refused={a: "is recorded by the 'torch' profiler; the 'npu' profiler records 'cpu' and 'npu'" for a in ("cuda", "xpu")},
    )
    return kept


@checked
def profile_kwargs(
    profiler: Any, spec: ProfileSpec, options: NpuOptions, *, window: Window, first_step: int, worker: str
) -> dict[str, Any]:
    """The keyword arguments for ``torch_npu.profiler.profile`` (``profiler`` is that module).

    The schedule is evaluated at the session's step numbers (the driver starts torch_npu's step
    counter at ``first_step``), hence ``skip_first=first_step``; keywords throughout, because
    torch_npu's ``schedule`` takes ``(wait, active, warmup)`` positionally.
    """
    assert spec.activities is not None, "NpuProfiler.check resolves activities"
    kinds = {"cpu": profiler.ProfilerActivity.CPU, "npu": profiler.ProfilerActivity.NPU}
    schedule = profiler.schedule(
        wait=0,
        warmup=window.start - first_step,
        active=window.length or _UNBOUNDED_STEPS,
        repeat=1,
        skip_first=first_step,
    )
    handler = profiler.tensorboard_trace_handler(dir_name=str(spec.output_dir), worker_name=worker, analyse_flag=options.analysis)
    # Always passed: without NPU activity torch_npu ignores it (and says so), but passing None
    # makes it build a default one, which prints a second, misleading warning about AI Core
    # metrics being reset.
    experimental = profiler._ExperimentalConfig(**experimental_kwargs(profiler, options))
    return {
        "activities": [kinds[a] for a in spec.activities],
        "schedule": schedule,
        "on_trace_ready": handler,
        "record_shapes": spec.shapes,
        "profile_memory": spec.memory,
        "with_stack": spec.stack,
        "with_flops": spec.flops,
        "with_modules": spec.modules,
        "experimental_config": experimental,
    }


def experimental_kwargs(profiler: Any, options: NpuOptions) -> dict[str, Any]:
    """Keyword arguments for ``torch_npu.profiler._ExperimentalConfig`` from checked options.

    ``mstx`` replaced ``msprof_tx`` (which now warns as deprecated); older torch_npu releases
    only know ``msprof_tx``, so the name is taken from the installed signature.
    """
    accepted = inspect.signature(profiler._ExperimentalConfig).parameters
    kwargs: dict[str, Any] = {
        "profiler_level": getattr(profiler.ProfilerLevel, _LEVEL_NAMES[options.level]),
        "aic_metrics": getattr(profiler.AiCMetrics, options.aic_metrics),
        "l2_cache": options.l2_cache,
        "data_simplification": options.data_simplification,
        "export_type": [getattr(profiler.ExportType, _EXPORT_NAMES[t]) for t in options.export_type],
        ("mstx" if "mstx" in accepted else "msprof_tx"): options.mstx,
    }
    for key in ("mstx_domain_include", "mstx_domain_exclude"):
        domains = getattr(options, key)
        if not domains:
            continue
        if key not in accepted:
            raise PluginError(f"options.npu.{key} needs a newer torch_npu: this one's _ExperimentalConfig has no {key}")
        kwargs[key] = list(domains)
    return kwargs


class NpuProfiler:
    """The ``npu`` entry of ``profwin.profilers``."""

    name = "npu"
    lead_steps = 1
    writes_parts = True
    engine_flavour = staticmethod(engine_flavour)
    """:func:`profwin_npu.engine_flavour`, reachable through ``profwin.profiler("npu")``."""

    def validate_options(self, options: Mapping[str, Any]) -> None:
        """Check ``options.npu`` without torch_npu (``profwin validate`` calls this)."""
        npu_options(ProfileSpec(options={"npu": options}))

    def check(self, spec: ProfileSpec) -> ProfileSpec:
        npu_options(spec)  # bad options fail before torch_npu is even imported
        torch_npu = import_torch_npu()
        for var in MSPROF_ENV_VARS:
            if os.environ.get(var):
                warn(
                    f"profwin: {var} is set (the msprof command line is collecting), so torch_npu.profiler "
                    "does nothing and profwin will write no *_ascend_pt folder"
                )
        return spec.replace(activities=resolve_activities(spec, npu_available=bool(torch_npu.npu.is_available())))

    def open(self, spec: ProfileSpec, *, window: Window, first_step: int, rank: int, part: Part | None = None) -> NpuDriver:
        return NpuDriver(spec, window=window, first_step=first_step, rank=rank, part=part)


@checked
class NpuDriver:
    """One ``torch_npu.profiler.profile`` over one window, or one part of it (see the module docstring)."""

    def __init__(self, spec: ProfileSpec, *, window: Window, first_step: int, rank: int, part: Part | None = None) -> None:
        profiler = import_torch_npu().profiler
        self._spec = spec
        self._window = window
        self._rank = rank
        self._step = first_step
        self._options = npu_options(spec)
        self._worker = _unique(spec.output_dir, worker_name(spec, rank=rank, window=window, part=part))
        self._existing = set(ascend_dirs(spec.output_dir, self._worker))
        kwargs = profile_kwargs(profiler, spec, self._options, window=window, first_step=first_step, worker=self._worker)
        self._prof = profiler.profile(**kwargs)
        # Count from the session's step, not 0: the schedule and the ProfilerStep#k markers both
        # read this counter.
        self._prof.step_num = first_step
        self._prof.current_action = self._prof.schedule(first_step)
        self._prof.start()

    def advance(self, step: int) -> None:
        assert step == self._step + 1, f"steps arrive one at a time (had {self._step}, got {step})"
        self._prof.step()
        self._step = step

    def close(self, steps: Window | None, *, failed: bool) -> list[Artifact]:
        if steps is None:
            # No window step ran. Closed in warm-up, torch_npu deletes its folder itself; a
            # window starting at step 0 was already recording the session's set-up, which is
            # not a window step either: drop that folder too, as the session reports "nothing
            # written".
            self._prof.stop()
            for path in self._new_dirs():
                shutil.rmtree(path, ignore_errors=True)
            return []
        if self._window.end is not None and self._step == self._window.end - 1:
            # The last window step is in RECORD_AND_SAVE: one more step() saves without the
            # "scheduling cycle has not yet completed" warning that stop() would print there.
            self._prof.step()
        self._prof.stop()
        return self._collect(steps)

    def _new_dirs(self) -> list[Path]:
        return [p for p in ascend_dirs(self._spec.output_dir, self._worker) if p not in self._existing]

    def _collect(self, steps: Window) -> list[Artifact]:
        written = self._new_dirs()
        if not written:
            busy = [var for var in MSPROF_ENV_VARS if os.environ.get(var)]
            if busy:
                warn(f"profwin: no *_ascend_pt folder for steps {steps}: {busy[0]} is set")
                return []
            raise PluginError(
                f"torch_npu wrote no {self._worker}_{os.getpid()}_*{ASCEND_SUFFIX} folder under {self._spec.output_dir} "
                f"for steps {steps}. torch_npu reports its failures only as printed '[ERROR]'/'[WARNING]' lines; "
                "look for them above this error"
            )
        if self._options.analysis:
            for path in written:
                if not (path / "ASCEND_PROFILER_OUTPUT").is_dir():
                    warn(
                        f"profwin: analysis was on but {path} has no ASCEND_PROFILER_OUTPUT (parsing failed; "
                        "see torch_npu's printed messages); parse it later with profwin_npu.analyse()"
                    )
        return [
            Artifact(path=path, steps=steps, bytes=dir_size(path), rank=self._rank, kind="ascend-pt", producer="npu")
            for path in written
        ]
