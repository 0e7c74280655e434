"""Entry point of the profwin-sglang plugin: a description only, so listing plugins stays cheap."""

from profwin.plugin import PluginSpec

PLUGIN = PluginSpec(
    name="sglang",
    kind="backend",
    target="profwin_sglang:SglangBackend",
    requires=(),
    install_hint="profwin-sglang[engine]",
    summary="SGLang: session-relative windows of scheduler batches over HTTP or Engine",
)
