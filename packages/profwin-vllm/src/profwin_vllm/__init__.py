"""profwin plugin for vllm (work in progress)."""
