"""A Ray node whose raylet registers with the GCS late, started by ``ray.init`` (run with the
cached Ray environment's python by test_patience.py; prints ``UP`` or ``FAILED <why>``).

    patience_check.py patient|impatient SECONDS

Ray 2.60 allows a node's raylet 30 s to register (``ray/_private/node.py``, fixed). Here the node
lookup Ray polls answers "not registered yet" for SECONDS, as a raylet on a machine at load 12
does; with ``patient`` the driver first calls :func:`readiness.patient_ray`, as the suite's
drivers do.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # integration_tests/readiness.py
import readiness
from ray._private import services

real = services.get_node
first: list[float] = []


def late(*args: Any, **kwargs: Any) -> Any:
    first[:] = first or [time.monotonic()]
    if time.monotonic() - first[0] < float(sys.argv[2]):
        raise RuntimeError("node not registered yet")  # what Ray's get_node says before the raylet registers
    return real(*args, **kwargs)


services.get_node = late
if sys.argv[1] == "patient":
    readiness.patient_ray()

import ray  # noqa: E402

try:
    ray.init(address="local", num_cpus=1, include_dashboard=False, logging_level="ERROR")  # its own cluster, always
except Exception as exc:
    print(f"FAILED {exc}", flush=True)
else:
    print(f"UP after {time.monotonic() - first[0]:.0f} s", flush=True)
    ray.shutdown()
