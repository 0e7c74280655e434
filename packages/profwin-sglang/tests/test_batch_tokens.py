"""What the server plugin reads from one SGLang batch (``_batch_tokens``).

The batches here are stand-ins with the fields of SGLang 0.5.23's ``ScheduleBatch`` that the
plugin reads (``reqs``, ``seq_lens_cpu``, ``forward_mode``, ``chunked_req``, ``extend_lens``,
``decoding_reqs``; a request's ``origin_input_ids``); the real batches are checked against
SGLang's own record in integration_tests/sglang/test_token_windows.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from profwin_sglang.server_plugin import _batch_tokens


class _Lengths(list[int]):
    def tolist(self) -> list[int]:
        return list(self)


def _batch(
    mode: str, reqs: list[Any], lengths: list[int], *, chunked: Any = None, extend_lens: Any = None, decoding: Any = None
) -> Any:
    forward_mode = SimpleNamespace(is_extend=lambda: mode in ("EXTEND", "MIXED"), is_mixed=lambda: mode == "MIXED")
    return SimpleNamespace(
        reqs=reqs,
        seq_lens_cpu=_Lengths(lengths),
        forward_mode=forward_mode,
        chunked_req=chunked,
        extend_lens=extend_lens,
        decoding_reqs=decoding,
    )


def _req(prompt: int) -> Any:
    return SimpleNamespace(origin_input_ids=[0] * prompt)


def test_a_chunk_that_continues_produces_no_token() -> None:
    whole, part = _req(10), _req(90)
    batch = _batch("EXTEND", [whole, part], [10, 54], chunked=part, extend_lens=[10, 54])
    assert _batch_tokens(batch) == ([0], 2, 64, False)


def test_a_last_chunk_produces_token_0_and_counts_only_its_own_tokens() -> None:
    part = _req(90)
    assert _batch_tokens(_batch("EXTEND", [part], [90], extend_lens=[26])) == ([0], 1, 26, False)


def test_a_mixed_batch_decodes_the_running_requests_and_prefills_the_new_one() -> None:
    """--enable-mixed-chunk: the running requests are appended to the prefill batch, each an
    extend of 1 (SGLang's ``mix_with_running``), and named in ``decoding_reqs``."""
    new, running = _req(70), [_req(40), _req(40)]
    batch = _batch("MIXED", [new, *running], [64, 45, 45], chunked=new, extend_lens=[64, 1, 1], decoding=running)
    assert _batch_tokens(batch) == ([5, 5], 1, 64, True)


@pytest.mark.parametrize("stale", [True, False])
def test_a_decode_batch_counts_every_request_even_with_a_stale_chunked_req(stale: bool) -> None:
    # SGLang makes the first prefill batch the running batch: its chunked_req still names the
    # request it chunked then, which has long finished its prefill and decodes.
    reqs = [_req(45), _req(45), _req(45), _req(45)]
    batch = _batch("DECODE", reqs, [47, 47, 47, 47], chunked=reqs[3] if stale else None, extend_lens=[45, 45, 45, 45])
    assert _batch_tokens(batch) == ([2, 2, 2, 2], 0, 0, True)


def test_a_retracted_request_recomputed_produces_its_next_token_from_a_prefill() -> None:
    """SGLang recomputes a retracted request in a prefill batch (its prompt and outputs so far,
    less what the radix cache holds): its token 18 comes from a prefill row, so the batch decodes
    nothing (a token window stays open across it, as across an admission)."""
    back = _req(30)
    assert _batch_tokens(_batch("EXTEND", [back], [48], extend_lens=[5])) == ([18], 1, 5, False)
