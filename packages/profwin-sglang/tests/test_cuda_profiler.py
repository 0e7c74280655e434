"""SGLang's ``CUDA_PROFILER`` activity (``options.sglang.cuda_profiler``): nsys's capture range is
what SGLang records, so only plans that record exactly the window may carry it. Pure: no sglang."""

from __future__ import annotations

from pathlib import Path

import pytest

from profwin import ConfigError, ProfileSpec, Window
from profwin_sglang.plan import plan_for


def _spec(tmp_path: Path, window: str, **sglang: object) -> ProfileSpec:
    return ProfileSpec(window=Window.parse(window), output_dir=tmp_path, options={"sglang": {"cuda_profiler": True, **sglang}})


@pytest.mark.parametrize(
    ("window", "plugin", "mechanism"),
    [("3:8", True, "relative"), ("0:5", False, "immediate"), ("0:5", None, "immediate")],
)
def test_exact_plans_carry_the_capture_range(tmp_path: Path, window: str, plugin: bool | None, mechanism: str) -> None:
    plan = plan_for(_spec(tmp_path, window), version="0.5.23", given=True, plugin=plugin, device="cuda")
    assert plan.mechanism == mechanism
    assert plan.request is not None
    assert "CUDA_PROFILER" in plan.request["activities"]
    assert plan.records == plan.window


def test_a_trimmed_plan_is_refused_before_anything_is_sent(tmp_path: Path) -> None:
    """Without the server plugin a window after step 0 records 0:end and trims the torch trace;
    an nsys report cannot be trimmed."""
    with pytest.raises(ConfigError, match=r"options\.sglang\.cuda_profiler: nsys's capture range cannot be trimmed.*0:8"):
        plan_for(_spec(tmp_path, "3:8"), version="0.5.23", given=True, plugin=False, device="cuda")
    with pytest.raises(ConfigError, match="cannot be trimmed"):
        plan_for(_spec(tmp_path, "3:8", start="trim"), version="0.5.23", given=True, plugin=True, device="cuda")
    # Without CUDA_PROFILER the same plan trims as before.
    plain = ProfileSpec(window=Window(3, 8), output_dir=tmp_path)
    assert plan_for(plain, version="0.5.23", given=True, plugin=False, device="cuda").mechanism == "trim"
