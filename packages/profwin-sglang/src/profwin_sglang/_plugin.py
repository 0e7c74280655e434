"""Entry point of the profwin-sglang plugin: a description only, so listing plugins stays cheap."""

from profwin.plugin import PluginSpec, StepMarker

STEP_MARKER = StepMarker(producer="sglang", pattern=r"step\[[A-Z_]+\b", numbering="order", preference=20)
"""How SGLang marks a step in its traces (one per scheduler batch)."""

PLUGIN = PluginSpec(
    name="sglang",
    kind="backend",
    target="profwin_sglang:SglangBackend",
    requires=(),
    install_hint="profwin-sglang[engine]",
    summary="SGLang: session-relative windows of scheduler batches over HTTP or Engine",
    step_marker=STEP_MARKER,
)
