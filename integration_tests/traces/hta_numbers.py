"""Print HTA's device-time numbers for the trace folder argv[1] as JSON (run in an HTA environment).

Rank 0's temporal breakdown (idle, compute and kernel time), kernel time by type from the
kernel breakdown, and the launch delays of its CUDA launch statistics, all with visualize=False.
"""

import json
import logging
import sys

from hta.trace_analysis import TraceAnalysis
from hta.version import __version_tuple__

logging.disable(logging.WARNING)
analysis = TraceAnalysis(trace_dir=sys.argv[1])
temporal = analysis.get_temporal_breakdown(visualize=False).iloc[0]
_, kernels = analysis.get_gpu_kernel_breakdown(visualize=False)
launches = analysis.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)[0]
print(
    json.dumps(
        {
            "hta": ".".join(map(str, __version_tuple__)),
            "idle_us": float(temporal["idle_time(us)"]),
            "compute_us": float(temporal["compute_time(us)"]),
            "kernel_time_us": float(temporal["kernel_time(us)"]),
            "by_kind": {str(k).lower(): float(v) for k, v in kernels.groupby("kernel_type")["sum (us)"].sum().items()},
            "launch_delay_mean_us": float(launches["launch_delay"].mean()),
            "launch_delay_max_us": float(launches["launch_delay"].max()),
            "launches": len(launches),
        }
    )
)
