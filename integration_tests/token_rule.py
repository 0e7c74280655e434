"""The token-window rule of docs/window.md written out for the real-engine tests, apart from
profwin.runtime.tokens: the expected steps come from an engine's own record through this, not through the
code under test. Standard library only."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping


def parse(window: str) -> tuple[int, int | None]:
    """``"4:12"`` -> ``(4, 12)``, ``"6:"`` -> ``(6, None)``."""
    first, _, last = window.partition(":")
    return int(first), int(last) if last else None


def produced_by_step(counts: Iterable[Mapping[str, int]], decoding: Iterable[Collection[str]] | None = None) -> list[list[int]]:
    """Each step's produced token indices, from the engine's per-step count of each request's
    tokens so far (after the step): a request whose count grew produced the indices in between.
    ``decoding``, when given, names each step's requests that decode in it: one whose count did
    not grow computed a token the engine dropped (docs/window.md, "Tokens an engine computes and
    discards"), whose index is its count."""
    counts = list(counts)
    decoders_by_step = [()] * len(counts) if decoding is None else list(decoding)
    made: dict[str, int] = {}
    steps = []
    for step, decoders in zip(counts, decoders_by_step, strict=True):
        indices = []
        for request, total in step.items():
            before = made.get(request, 0)
            if total > before:
                indices.extend(range(before, total))
            elif request in decoders:
                indices.append(total)
            made[request] = max(before, total)
        steps.append(indices)
    return steps


def expected_steps(window: str, produced: list[list[int]], decodes: list[bool] | None = None) -> range | None:
    """Open at the first step with a token in [start, end); stay while every step has one or
    decodes nothing (a prefill-only step: ``decodes[s]`` false where the engine's record says
    which steps decode, else each of its tokens is a token 0, or it has none); at most
    2 * (end - start) steps with a token of the window and at most as many prefill-only steps;
    ``None`` when no step has one."""
    start, end = parse(window)

    def inside(indices: list[int]) -> bool:
        return any(k >= start and (end is None or k < end) for k in indices)

    opened = next((s for s, indices in enumerate(produced) if inside(indices)), None)
    if opened is None:
        return None
    cap = None if end is None else 2 * (end - start)
    with_tokens, held, last = 1, 0, opened
    for step in range(opened + 1, len(produced)):
        indices = produced[step]
        quiet = all(k == 0 for k in indices) if decodes is None else not decodes[step]
        if inside(indices):
            if cap is not None and with_tokens >= cap:
                break
            with_tokens += 1
        elif quiet and (cap is None or held < cap):
            held += 1
        else:
            break
        last += 1
    return range(opened, last + 1)


def held(window: str, indices: list[int]) -> dict[str, str]:
    """The token fields profwin's annotation must give a step that produced ``indices``."""
    start, end = parse(window)
    ordered = sorted(indices)
    return {
        "decoding": str(len(ordered)),
        "token_min": str(ordered[0]) if ordered else "-",
        "token_median": str(ordered[(len(ordered) - 1) // 2]) if ordered else "-",
        "token_max": str(ordered[-1]) if ordered else "-",
        "in_window": str(sum(1 for k in ordered if k >= start and (end is None or k < end))),
    }


def fields(name: str) -> dict[str, str]:
    """A ``profwin.tokens key=value ...`` annotation's fields."""
    return dict(part.split("=", 1) for part in name.split()[1:])
