"""profwin plugin for memory (work in progress)."""
