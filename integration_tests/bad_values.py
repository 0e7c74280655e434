"""The bad values every public callable is driven with (``test_bad_arguments.py``, and profwin-ray's
root in its own environment, ``ray/bad_arguments_check.py``): a wrong type, ``None``, a huge or
negative int, NaN, a string holding NUL or an unknown ``~user`` or too long for a file name, a
10,000-deep dict or list, a mapping with non-str keys; collections that are not built-in
containers (a range, one of 10**18 items, an array-like whose ``==`` answers with no bool), a path-like whose ``__fspath__`` fails or gives an int, a list and a dict holding
themselves, a class and a module where an object is wanted, a device that opens but cannot be read.

Standard library only: a driver in an engine's environment imports it too (with this folder on
``sys.path``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["DEPTH", "FIXED", "Ambiguous", "BadPath"]

DEPTH = 10_000


def _deep(kind: type) -> Any:
    value: Any = kind()
    for _ in range(DEPTH):
        value = {"a": value} if kind is dict else [value]
    return value


class Ambiguous:
    """An array-like (numpy's arrays are): ``==`` answers with another array-like, whose truth is an error."""

    def __eq__(self, other: object) -> Any:
        return Ambiguous()

    __ne__ = __eq__
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise ValueError("the truth value of an array with more than one element is ambiguous")

    def __len__(self) -> int:
        return 2

    def __iter__(self) -> Any:
        return iter((1, 2))

    def __contains__(self, item: object) -> bool:
        return item in (1, 2)

    def __repr__(self) -> str:
        return "Ambiguous([1, 2])"


class BadPath:
    """A path-like whose ``__fspath__`` gives ``value`` (an int), or raises when it is an exception."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __fspath__(self) -> Any:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value

    def __repr__(self) -> str:
        return f"BadPath({self.value!r})"


def _holding_itself(kind: type) -> Any:
    value: Any = kind()
    if kind is dict:
        value["a"] = value
    else:
        value.append(value)
    return value


# Made once: drawing from a list costs nothing, and a failure is reported without shrinking them.
FIXED = [
    None, True, False, -1, -(10**6), 2**31, 2**63, 10**5000, -(10**5000), math.nan, math.inf, -math.inf, 1e308,
    "", "\0", "a\0b", "~profwin-no-such-user/x", "x" * 100_000, "\x1b[2J\r", "9" * 5000, "\ud800", "../" * 50,
    b"\0", Path("a\0b"), Path("~profwin-no-such-user/x"), object(), float, print,
    _deep(dict), _deep(list), {1: 2}, {None: "x"}, {(1,): {}}, [None], [math.nan, "x"], {1, 2}, (),
    range(3), range(10**18), Ambiguous(), BadPath(5), BadPath(RuntimeError("no path")),
    _holding_itself(list), _holding_itself(dict), Path, math, "/proc/self/mem",
]  # fmt: skip
