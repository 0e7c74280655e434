"""profwin-npu: profile a window of steps on Ascend NPUs.

* ``profwin.Session(spec, profiler="npu")`` records the window with ``torch_npu.profiler``
  (:class:`NpuProfiler`), into one ``*_ascend_pt`` folder per window;
* ``spec.options["npu"]`` holds the Ascend options (:class:`NpuOptions`: level, AI Core
  metrics, L2 cache, data simplification, export type, analysis, mstx), checked up front;
* :func:`engine_flavour` says what vllm-ascend and SGLang-on-NPU do with a spec, for the vllm
  and sglang backends (reached through the ``profwin.engine_flavours`` entry point);
* :func:`analyse` parses ``*_ascend_pt`` folders offline.

Nothing here imports torch_npu until a profiler is checked or opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profwin.plugin import lazy_exports

if TYPE_CHECKING:  # imported on first use (profwin.plugin.lazy_exports): loading the entry point stays cheap
    from profwin_npu.analysis import PARSED_DIR, analyse
    from profwin_npu.driver import ASCEND_SUFFIX, MSPROF_ENV_VARS, NpuDriver, NpuProfiler, import_torch_npu, profile_kwargs
    from profwin_npu.engines import (
        ENGINES,
        SGLANG_NPU,
        VERL_NPU_DEFAULTS,
        VLLM_ASCEND,
        VLLM_ASCEND_WINDOW_SINCE,
        NpuOptionIgnored,
        engine_flavour,
        engine_notes,
    )
    from profwin_npu.options import AIC_METRICS, EXPORT_TYPES, LEVELS, OPTION_KEYS, NpuOptions, npu_options

__all__ = [
    "AIC_METRICS",
    "ASCEND_SUFFIX",
    "ENGINES",
    "EXPORT_TYPES",
    "LEVELS",
    "MSPROF_ENV_VARS",
    "OPTION_KEYS",
    "PARSED_DIR",
    "SGLANG_NPU",
    "VERL_NPU_DEFAULTS",
    "VLLM_ASCEND",
    "VLLM_ASCEND_WINDOW_SINCE",
    "NpuDriver",
    "NpuOptionIgnored",
    "NpuOptions",
    "NpuProfiler",
    "analyse",
    "engine_flavour",
    "engine_notes",
    "import_torch_npu",
    "npu_options",
    "profile_kwargs",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "profwin_npu.analysis": ("PARSED_DIR", "analyse"),
        "profwin_npu.driver": (
            "ASCEND_SUFFIX",
            "MSPROF_ENV_VARS",
            "NpuDriver",
            "NpuProfiler",
            "import_torch_npu",
            "profile_kwargs",
        ),
        "profwin_npu.engines": (
            "ENGINES",
            "SGLANG_NPU",
            "VERL_NPU_DEFAULTS",
            "VLLM_ASCEND",
            "VLLM_ASCEND_WINDOW_SINCE",
            "NpuOptionIgnored",
            "engine_flavour",
            "engine_notes",
        ),
        "profwin_npu.options": ("AIC_METRICS", "EXPORT_TYPES", "LEVELS", "OPTION_KEYS", "NpuOptions", "npu_options"),
    },
)
