"""The demo's decoder runs in flat memory however many steps it is asked for (real torch on CPU)."""

from __future__ import annotations

from profwin.demo import TinyDecoder


def test_the_kv_cache_and_the_tokens_kept_are_bounded_by_the_context() -> None:
    model = TinyDecoder(context=8)
    tokens = model.generate(30)
    assert len(tokens) == 8
    for keys, values in model.cache:
        assert keys.shape[1] == 8  # unbounded before: one position per step, copied whole each step
        assert values.shape[1] == 8
    short = TinyDecoder(context=8).generate(5)
    assert short == TinyDecoder(context=64).generate(5)  # within the context nothing changes
    assert len(short) == 5
