"""profwin plugin for npu (work in progress)."""
