"""profwin's kinds of device work are traceinsight 0.6.1's kernel types, name by name.

The names are real kernel, copy and collective names of CUDA, ROCm and Ascend traces, and the
edge cases of HTA's patterns; traceinsight's ``get_kernel_type`` runs in its own environment.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from profwin_traces.scan import KERNEL_KINDS, kernel_kind

pytestmark = [pytest.mark.slow]

NAMES = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, float, float*)",
    "ampere_sgemm_128x64_tn",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)",
    "void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
    "ncclAllReduce",
    "hcclAllReduce",
    "hipMemcpyWithStream",
    "Memcpy HtoD (Pageable -> Device)",
    "Memcpy DtoD (Device -> Device)",
    "Memset (Device)",
    "dma_copy",
    "cudaStreamSynchronize",
    "Context Sync",
    "Stream Wait Event",
    "cudaLaunchKernel",
    "runFunction",
    "job_exe_0",
    "fmha_cutlassF_f32_aligned_64x64_rf_sm80",
    "triton_poi_fused_add_0",
    "Memcpy",
    "xdma",
]

SCRIPT = """
import json, sys
from hta.utils.utils import get_kernel_type
print(json.dumps({n: get_kernel_type(n) for n in json.loads(sys.argv[1])}))
"""
HTA_KIND = {"COMPUTATION": "compute", "COMMUNICATION": "communication", "MEMORY": "memory", "OTHER": "other"}


def test_kernel_kinds_are_traceinsights(traceinsight_python: Path) -> None:
    proc = subprocess.run(
        [str(traceinsight_python), "-c", SCRIPT, json.dumps(NAMES)], capture_output=True, text=True, check=True, timeout=300
    )
    theirs = {name: HTA_KIND[kind] for name, kind in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
    ours = {name: KERNEL_KINDS[kernel_kind(name)] for name in NAMES}
    assert ours == theirs
    assert set(ours.values()) == set(KERNEL_KINDS)  # every kind is exercised
