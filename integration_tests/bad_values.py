"""The bad values every public callable is driven with (``test_bad_arguments.py``, and profwin-ray's
root in its own environment, ``ray/bad_arguments_check.py``): a wrong type, ``None``, a huge or
negative int, NaN, a string holding NUL or an unknown ``~user`` or too long for a file name, a
10,000-deep dict or list, a mapping with non-str keys.

Standard library only: a driver in an engine's environment imports it too (with this folder on
``sys.path``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["DEPTH", "FIXED"]

DEPTH = 10_000


def _deep(kind: type) -> Any:
    value: Any = kind()
    for _ in range(DEPTH):
        value = {"a": value} if kind is dict else [value]
    return value


# Made once: drawing from a list costs nothing, and a failure is reported without shrinking them.
FIXED = [
    None, True, False, -1, -(10**6), 2**31, 2**63, 10**5000, -(10**5000), math.nan, math.inf, -math.inf, 1e308,
    "", "\0", "a\0b", "~profwin-no-such-user/x", "x" * 100_000, "\x1b[2J\r", "9" * 5000, "\ud800", "../" * 50,
    b"\0", Path("a\0b"), Path("~profwin-no-such-user/x"), object(), float, print,
    _deep(dict), _deep(list), {1: 2}, {None: "x"}, {(1,): {}}, [None], [math.nan, "x"], {1, 2}, (),
]  # fmt: skip
