"""Entry point of the profwin-npu plugin: a description only, so listing plugins stays cheap."""

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="npu",
    kind="profiler",
    target="profwin_npu:NpuProfiler",
    requires=("torch", "torch_npu"),
    install_hint="torch_npu matching your torch (pip install 'profwin-npu[engine]') and the Ascend CANN toolkit",
    summary="torch_npu.profiler over exactly the window's steps on Ascend NPUs (*_ascend_pt folders)",
)
