"""Entry point of the profwin-vllm plugin: a description only, so listing plugins stays cheap."""

from profwin.plugin import PluginSpec, StepMarker

STEP_MARKER = StepMarker(producer="vllm", pattern=r"execute_(?:\d+_)?context_", numbering="order", preference=10)
"""How vLLM marks a step in its traces (one per engine step)."""

PLUGIN = PluginSpec(
    name="vllm",
    kind="backend",
    target="profwin_vllm.backend:VllmBackend",
    # Rendering settings and driving servers over HTTP need no vLLM here; only session() on an
    # in-process LLM does, and it is handed the engine object.
    requires=(),
    install_hint="profwin-vllm[engine]",
    summary="vLLM: exact step windows (delay/max iterations by version), launch args, live start/stop over HTTP",
    step_marker=STEP_MARKER,
)
