"""Suite-wide rule: a test may skip only because this machine lacks the hardware it needs.

A skip elsewhere is a setup bug that hides a test on a clean machine (a tool that is not there,
a cache that was warm only on a developer's machine), so it fails the run, always, locally and
in CI. Tests that need a device are marked ``cuda`` or ``npu`` and may skip where there is none.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

HARDWARE_MARKERS = ("cuda", "npu")


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr: Any = report.longrepr
    return str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)


def _fail(report: pytest.TestReport | pytest.CollectReport, where: str) -> None:
    report.outcome = "failed"
    report.longrepr = (
        f"{where} skipped for a reason other than missing hardware: {_reason(report)}\n"
        f"Only tests marked {' or '.join(HARDWARE_MARKERS)} may skip (conftest.py at the repository root)."
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and not any(item.get_closest_marker(m) for m in HARDWARE_MARKERS):
        _fail(report, "test")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if report.skipped:
        _fail(report, "module")
