"""Only the arguments the installed torch accepts reach ``_record_memory_history``.

The real function cannot run without CUDA, so these pass stand-ins with the signatures of the
torch versions profwin supports (2.4 has no ``clear_history``); the installed signature is
checked against the real torch too.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from profwin_memory import MemoryOptions, history_kwargs


def torch_2_4(
    enabled: str | None = "all",
    context: str | None = "all",
    stacks: str = "all",
    max_entries: int = sys.maxsize,
    device: Any = None,
) -> None:
    """The signature of torch 2.4's ``_record_memory_history``."""


def test_older_torch_gets_no_clear_history() -> None:
    options = MemoryOptions(max_entries=123, context="alloc", stacks="all")
    assert history_kwargs(torch_2_4, options, enabled="all") == {
        "enabled": "all",
        "context": "alloc",
        "stacks": "all",
        "max_entries": 123,
    }
    assert history_kwargs(torch_2_4, options, enabled=None) == {"enabled": None}


def test_installed_torch_gets_a_bounded_cleared_history() -> None:
    torch = pytest.importorskip("torch")
    kwargs = history_kwargs(torch.cuda.memory._record_memory_history, MemoryOptions(), enabled="all")
    assert kwargs == {"enabled": "all", "context": "all", "stacks": "python", "max_entries": 100_000, "clear_history": True}
