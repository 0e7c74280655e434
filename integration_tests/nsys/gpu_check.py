"""The ``nsys`` profiler on a real CUDA device under Nsight Systems: the report holds exactly the window.

Run on a GPU machine that has ``nsys`` (Nsight Systems CLI; not on PyPI: its ``nvidia-nsys-cli``
is a placeholder that refuses to install. It comes with the CUDA toolkit, NVIDIA's apt/yum
package ``nsight-systems-cli``, or NGC's PyTorch containers), from the repository root::

    python integration_tests/nsys/gpu_check.py            # about a minute

It needs torch with CUDA and attrs; profwin comes from ``packages/*/src`` of this checkout
(``PROFWIN_EXTRA_PATH`` as for integration_tests/memory/cuda_check.py). It runs a loop of 8
steps under ``nsys profile --capture-range=cudaProfilerApi --capture-range-end=stop --trace=cuda,nvtx``
with ``profwin.Session(spec, profiler="nsys")`` for window 3:6; step ``k`` launches ``k + 1``
kernels, so the report must hold exactly the NVTX ranges ``profwin step 3..5`` and
``4 + 5 + 6 = 15`` kernels. It reads the report back with ``nsys export --type sqlite``, prints one
JSON line per check, and exits 1 if any failed (2 when nsys or CUDA is missing).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WINDOW = (3, 6)
STEPS = 8

CHILD = """
import os, sys
for p in reversed([p for p in os.environ.get("PROFWIN_EXTRA_PATH", "").split(os.pathsep) if p]):
    sys.path.insert(0, p)
sys.path[:0] = sorted(str(p) for p in __import__("pathlib").Path(sys.argv[1]).glob("packages/*/src"))
import json, torch
from profwin import ProfileSpec, Session, Window
x = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
spec = ProfileSpec(window=Window({start}, {end}), output_dir=sys.argv[2], prefix="gpucheck")
with Session(spec, profiler="nsys") as s:
    for k in range({steps}):
        for _ in range(k + 1):
            x.add_(1.0)  # one elementwise kernel each
        s.step()
print(json.dumps([a.to_dict() for a in s.artifacts]))
"""


def line(check: str, ok: bool, **facts: Any) -> bool:
    print(json.dumps({"check": check, "ok": ok, **facts}), flush=True)
    return ok


def main() -> int:
    nsys = shutil.which("nsys")
    if nsys is None:
        line("nsys", False, error="no nsys on PATH (install Nsight Systems' CLI: nsight-systems-cli, or use an NGC container)")
        return 2
    work = Path(tempfile.mkdtemp(prefix="profwin-nsys-check-"))
    child = work / "child.py"
    child.write_text(CHILD.format(start=WINDOW[0], end=WINDOW[1], steps=STEPS))
    report = work / "report"
    command = [
        nsys, "profile", "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "--trace=cuda,nvtx",
        "--sample=none", "--cpuctxsw=none", "-o", str(report), sys.executable, str(child), str(ROOT), str(work / "out"),
    ]  # fmt: skip
    env = {**os.environ, "NSYS_NVTX_PROFILER_REGISTER_ONLY": "0"}
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=env)
    version = subprocess.run([nsys, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    if not line("run", proc.returncode == 0, nsys=version, returncode=proc.returncode, tail=proc.stderr[-1500:]):
        return 1
    artifacts = json.loads(proc.stdout.strip().splitlines()[-1])
    failed = 0
    failed += not line(
        "artifact",
        [(a["kind"], a["steps"]) for a in artifacts] == [("nsys-capture", f"{WINDOW[0]}:{WINDOW[1]}")],
        artifacts=artifacts,
    )
    reports = sorted(work.glob("report*.nsys-rep"))
    if not line("report", len(reports) == 1, reports=[p.name for p in reports]):
        return 1
    sqlite_path = work / "report.sqlite"
    subprocess.run(
        [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", str(sqlite_path), str(reports[0])],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    db = sqlite3.connect(sqlite_path)
    names = [
        row[0]
        for row in db.execute(
            "SELECT COALESCE(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId ORDER BY e.start"
        )
        if row[0] and str(row[0]).startswith("profwin step ")
    ]
    expected_names = [f"profwin step {k}" for k in range(*WINDOW)]
    failed += not line("nvtx ranges", names == expected_names, found=names, expected=expected_names)
    kernels = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    expected_kernels = sum(k + 1 for k in range(*WINDOW))
    failed += not line("kernels", kernels == expected_kernels, found=kernels, expected=expected_kernels)
    print(json.dumps({"work": str(work), "failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
