"""profwin plugin for sglang (work in progress)."""
