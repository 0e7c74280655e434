"""What the server plugin reads from one SGLang batch (``_batch_tokens``).

The batches here are stand-ins with the fields of SGLang's ``ScheduleBatch`` that the plugin reads
(``reqs``, ``seq_lens_cpu``, ``forward_mode``, ``chunked_req``); the real batches are checked
against SGLang's own record in integration_tests/sglang/test_token_windows.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from profwin_sglang.server_plugin import _batch_tokens


class _Lengths(list[int]):
    def tolist(self) -> list[int]:
        return list(self)


def _batch(mode: str, reqs: list[Any], lengths: list[int], chunked: Any = None) -> Any:
    forward_mode = SimpleNamespace(is_extend=lambda: mode == "EXTEND")
    return SimpleNamespace(reqs=reqs, seq_lens_cpu=_Lengths(lengths), forward_mode=forward_mode, chunked_req=chunked)


def _req(prompt: int, extend: int = 0) -> Any:
    return SimpleNamespace(origin_input_ids=[0] * prompt, extend_input_len=extend)


def test_a_chunk_that_continues_produces_no_token() -> None:
    whole, part = _req(10, extend=10), _req(90, extend=54)
    produced, prefilling, prefill_tokens = _batch_tokens(_batch("EXTEND", [whole, part], [10, 54], chunked=part))
    assert (produced, prefilling, prefill_tokens) == ([0], 2, 64)


@pytest.mark.parametrize("stale", [True, False])
def test_a_decode_batch_counts_every_request_even_with_a_stale_chunked_req(stale: bool) -> None:
    # SGLang makes the first prefill batch the running batch: its chunked_req still names the
    # request it chunked then, which has long finished its prefill and decodes.
    reqs = [_req(45), _req(45), _req(45), _req(45)]
    batch = _batch("DECODE", reqs, [47, 47, 47, 47], chunked=reqs[3] if stale else None)
    assert _batch_tokens(batch) == ([2, 2, 2, 2], 0, 0)
