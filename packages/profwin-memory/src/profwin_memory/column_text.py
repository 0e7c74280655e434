"""A column's JSON text checked and counted without decoding it: how ``summarize`` reads a big timeline.

Decoding a batch of a column makes a Python number per element and frees it again, and that is
most of the time a timeline takes to read. When the values are not kept, none needs to be made:
the text is valid exactly when it is written in the plain form a JSON writer uses, which a few
vectorised numpy passes over the batch's bytes show (each a few µs for 256 KiB), its length is
its number of commas, and where the rule bounds the values by the file (a step within ``steps``,
an op index within ``ops``) numpy computes them as integers, from the digits, to compare.

That form is narrow on purpose: digits, commas, ``-`` where the rule allows a negative, ``.``
where it allows a fraction; no whitespace, exponent, leading zero, or run of more than
:data:`MAX_DIGITS` digits (so that no integer is past what the checking decoder reads and no
number is past a float's range). Any other text, valid or not, and any value out of bounds, goes
to the checking decoder, which names the element that breaks a rule. So this path never accepts
what that decoder would refuse, and never refuses anything itself.

numpy (the ``fast`` extra) takes 0.1-0.3 CPU s to import, longer than msgspec takes to decode a
few MB: a file's first :data:`NUMPY_AFTER_CHARS` of column text are decoded, and numpy counts the
rest. Without numpy every batch is decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from profwin_traces import fast_module

__all__ = ["MAX_DIGITS", "NUMPY_AFTER_CHARS", "ColumnCounter"]

MAX_DIGITS = 18
"""The longest run of digits the plain form holds (an int64 has 19; a float's range ends past 300)."""
NUMPY_AFTER_CHARS = 8 << 20
"""Column text of one file decoded before numpy is imported to count the rest (8 MiB)."""

_COMMA, _MINUS, _DOT, _ZERO = b",-.0"
_WIDTHS = (1, 2, 4, 8, 16)  # runs of digits are measured by doubling, to 16 (> MAX_DIGITS / 2)
_VALUE_DIGITS = 9  # a bounded column's values are computed in uint32 below 10**9


class ColumnCounter:
    """Counts the columns of one file (one reader's; not shared between threads). It holds the
    numpy arrays every batch is checked in, kept from one batch to the next: a fresh 256 KiB
    array per step is fresh pages, and their page faults took longer than the steps."""

    def __init__(self) -> None:
        # None: not imported yet; False: not available (not installed, or PROFWIN_TRACES_FAST=0)
        self._np: Any = None
        self._chars = 0
        self._size = 0

    def decoder(
        self, integer: bool, low: int | None, high: int | None, checked: Callable[[str], Sequence[Any]] | None
    ) -> Callable[[str], Sequence[Any]] | None:
        """A decoder for :meth:`profwin_traces.JsonStream.array_batches` of a column of integers
        (else numbers) within ``[low, high)`` (``None``: unbounded), whose values are not kept:
        ``range(n)`` for a batch of ``n`` values in the plain form, else what ``checked`` (the
        checking decoder) answers, or without one a ``ValueError`` (the stream then decodes the
        batch and its caller checks it). ``checked`` itself where this path cannot count the rule."""
        if self._np is False:
            return checked
        within: tuple[int, int] | None = None
        if high is not None:
            # values computed from their digits: a step, an op index
            if not integer or low is None or not 0 <= low < high <= 10**_VALUE_DIGITS:
                return checked
            within = (low, high)
        elif low not in (0, None):
            return checked
        negative, fraction = low is None, not integer

        def decode(text: str) -> Sequence[Any]:
            count = self._count(text, negative, fraction, within)
            if count:
                return range(count)
            if checked is None:
                raise ValueError("not a column of numbers in the plain form")
            return checked(text)

        return decode

    def _count(self, text: str, negative: bool, fraction: bool, within: tuple[int, int] | None) -> int:
        """How many numbers the batch ``text`` (``[...]``) holds; 0 where it is not the plain form,
        a value is out of ``within``, or numpy is not in use (yet)."""
        if not self._np:
            self._chars += len(text)
            if self._np is False or self._chars <= NUMPY_AFTER_CHARS:
                return 0
            self._np = fast_module("numpy") or False
            if not self._np:
                return 0
        try:
            raw = text.encode("ascii")
        except UnicodeEncodeError:
            return 0
        if raw[:1] != b"[" or raw[-1:] != b"]":
            return 0
        n = len(raw)
        if n > self._size:
            self._arrays(max(n, 2 * self._size))
        np = self._np
        x, test = np.frombuffer(raw, np.uint8), self._test[:n]
        comma, digit, allowed = self._comma[:n], self._digit[:n], self._allowed[:n]
        np.equal(x, _COMMA, out=comma)
        comma[0] = comma[-1] = True  # "[" and "]" count as commas: every element sits between two
        np.less(np.subtract(x, _ZERO, out=self._byte[:n]), 10, out=digit)  # uint8 wraps: a byte below "0" is large
        np.bitwise_or(digit, comma, out=allowed)
        start = comma  # what a number's first digit follows
        if negative:
            minus, start = self._minus[:n], self._start[:n]
            np.equal(x, _MINUS, out=minus)
            allowed |= minus
            # "-" only starts an element (after a comma), and a digit follows it
            if np.greater(minus[1:], comma[:-1], out=test[1:]).any() or np.greater(minus[:-1], digit[1:], out=test[:-1]).any():
                return 0
            np.bitwise_or(comma, minus, out=start)
        if fraction:
            dot = self._dot[:n]
            np.equal(x, _DOT, out=dot)
            allowed |= dot
            between = np.bitwise_and(digit[:-2], digit[2:], out=test[1:-1])
            if np.greater(dot[1:-1], between, out=test[1:-1]).any():  # "." only between two digits
                return 0
        if not allowed.all() or np.bitwise_and(comma[:-1], comma[1:], out=test[:-1]).any():  # another byte; an empty element
            return 0
        leading = np.equal(x[1:-1], _ZERO, out=test[1:-1])
        leading &= start[:-2]
        leading &= digit[2:]
        if leading.any():  # a leading zero ("07", "-00")
            return 0
        runs = self._runs(n)
        if self._run_longer(runs, n, MAX_DIGITS if within is None else len(str(within[1] - 1))):
            return 0
        if fraction and self._two_dots(n, runs):
            return 0
        if within is not None and self._outside(n, *within):
            return 0
        return int(np.count_nonzero(comma)) - 1

    def _arrays(self, size: int) -> None:
        np = self._np
        self._size = size
        self._byte = np.empty(size, np.uint8)
        self._value, self._next = np.empty(size, np.uint32), np.empty(size, np.uint32)
        self._comma, self._digit, self._allowed, self._start, self._minus, self._dot, self._after, self._end, self._test = (
            np.empty(size, bool) for _ in range(9)
        )
        self._run_arrays = [np.empty(size, bool) for _ in _WIDTHS[1:]]

    def _runs(self, n: int) -> list[Any]:
        """``runs[k][j]``: the ``_WIDTHS[k]`` bytes ending at ``j`` are digits."""
        runs = [self._digit[:n]] + [run[:n] for run in self._run_arrays]
        for width, shorter, run in zip(_WIDTHS, runs, runs[1:], strict=False):
            run[:width] = shorter[:width]  # x[0] is "[": no run reaches past it
            self._np.bitwise_and(shorter[width:], shorter[:-width], out=run[width:])
        return runs

    def _run_longer(self, runs: list[Any], n: int, digits: int) -> bool:
        """Whether a run of more than ``digits`` (at most 30) digits is there: ``digits + 1`` in a
        row, made of the widths its binary digits name."""
        test, length, span = self._test[:n], digits + 1, 0
        for k in reversed(range(len(_WIDTHS))):
            if length & _WIDTHS[k]:
                if not span:
                    test[:] = runs[k]
                else:  # the run of this width ending just before the span so far
                    test[:span] = False
                    test[span:] &= runs[k][:-span]
                span += _WIDTHS[k]
        return bool(test.any())

    def _two_dots(self, n: int, runs: list[Any]) -> bool:
        """Whether an element holds two dots: a dot, at most :data:`MAX_DIGITS` digits, a dot."""
        np = self._np
        dot, after, test = self._dot[:n], self._after[:n], self._test[:n]
        # after[j]: a dot at some i <= j with only digits in (i, j]; each width doubles the reach, to 31
        np.copyto(after, dot)
        for width, run in zip(_WIDTHS, runs, strict=True):
            after[width:] |= np.bitwise_and(after[:-width], run[width:], out=test[width:])
        return bool(np.bitwise_and(after[:-1], dot[1:], out=test[:-1]).any())

    def _outside(self, n: int, low: int, high: int) -> bool:
        """Whether a value (of at most as many digits as ``high - 1``, checked before) is outside
        ``[low, high)``."""
        np = self._np
        digits = len(str(high - 1))
        # the smallest type that holds every value of that many digits
        kind = np.uint8 if digits <= 2 else np.uint16 if digits <= 4 else np.uint32
        digit, comma, test = self._digit[:n], self._comma[:n], self._test[:n]
        figure = np.multiply(self._byte[:n], digit, out=self._byte[:n])  # a digit's value, 0 elsewhere
        value, step = self._value.view(kind)[:n], self._next.view(kind)[:n]
        np.copyto(value, figure)
        for _ in range(digits - 1):  # Horner, within a run: value[j] = 10 * value[j - 1] + digit j
            np.multiply(value[:-1], 10, out=step[1:])
            step[1:] += figure[1:]
            np.multiply(step[1:], digit[1:], out=value[1:])
        end = np.bitwise_and(digit[:-1], comma[1:], out=self._end[: n - 1])  # an element's last digit
        if np.bitwise_and(np.greater_equal(value[:-1], high, out=test[:-1]), end, out=test[:-1]).any():
            return True
        return bool(low) and bool(np.bitwise_and(np.less(value[:-1], low, out=test[:-1]), end, out=test[:-1]).any())
