"""Which rollouts a trainer profiles: one selection type, one parser, one text form.

How it works, and why: docs/internals.md, ``profwin.selection``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from attrs import field, frozen

from profwin.arguments import checked
from profwin.errors import ConfigError, shown, unknown_key

__all__ = ["MAX_ROLLOUT_ID", "Rollouts"]

MAX_ROLLOUT_ID = 2**63 - 1
"""The largest rollout id (trainers count rollouts in 64-bit ints)."""
_MAX_IDS = 10_000  # listed ids; more is a range written out, which FIRST+COUNT says in 5 characters
_MAX_TEXT = 200_000  # characters of a selection's text: 10,000 ids of up to 19 digits and their commas
_DIGITS = len(str(MAX_ROLLOUT_ID))
_IDS_TEXT = re.compile(r"[0-9]+(?:,[0-9]+)*")
_RANGE_TEXT = re.compile(r"(?P<first>[0-9]*)(?:\+(?P<count>[0-9]*))?(?:%(?P<every>[0-9]+))?")
_FORMS = "rollout ids like '3,7', a first id and a count like '3+4', or every N like '%10' or '5%10'"


def _number(text: str, name: str, path: str) -> int:
    digits = text.lstrip("0") or "0"
    if len(digits) > _DIGITS or int(digits) > MAX_ROLLOUT_ID:  # int() of 5,000 digits is slow: length first
        raise ConfigError(f"{name} must be <= {MAX_ROLLOUT_ID} (2**63 - 1; got {shown(text)})", path=path)
    return int(digits)


def _checked(value: object, name: str, path: str, *, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an int >= {least} (got {shown(value)}, a {type(value).__name__})", path=path)
    if not least <= value <= MAX_ROLLOUT_ID:
        raise ConfigError(f"{name} must be an int >= {least} and <= {MAX_ROLLOUT_ID} (got {shown(value)})", path=path)
    return value


@checked(own=("ids", "first", "count", "every"))  # their rule names the config field (path) they came from
@frozen(init=False)
class Rollouts:
    """Which rollouts to profile: listed ``ids``, or ``count`` rollouts (``None``: no end), one
    every ``every`` ids, from ``first``.

    >>> Rollouts.parse("3,7").chosen(7)
    True
    >>> str(Rollouts(first=3, count=4))
    '3+4'
    >>> Rollouts.parse("5%10").chosen(25)
    True
    """

    ids: frozenset[int] | None = field()
    first: int = field()
    count: int | None = field()
    every: int = field()

    def __init__(
        self,
        ids: Iterable[int] | None = None,
        *,
        first: int | None = None,
        count: int | None = None,
        every: int | None = None,
        path: str = "rollouts",
    ) -> None:
        if ids is not None:
            if any(v is not None for v in (first, count, every)):
                raise ConfigError("give either ids or first/count/every, not both", path=path)
            self.__attrs_init__(_ids(ids, path), 0, None, 1)  # type: ignore[attr-defined]
            return
        if all(v is None for v in (first, count, every)):  # `is`: a value's own == may not give a bool
            raise ConfigError(f"must choose some rollouts: {_FORMS}", path=path)
        self.__attrs_init__(  # type: ignore[attr-defined]
            None,
            0 if first is None else _checked(first, "first", f"{path}.first", least=0),
            None if count is None else _checked(count, "count", f"{path}.count", least=1),
            1 if every is None else _checked(every, "every", f"{path}.every", least=1),
        )

    @classmethod
    def parse(cls, text: str, *, path: str = "rollouts") -> Rollouts:
        """``"3,7"``, ``"3+4"``, ``"3+"`` (3 and every later one), ``"%10"``, ``"5%10"`` or
        ``"5+3%10"``; spaces are ignored."""
        if not isinstance(text, str):
            raise ConfigError(f"must be text: {_FORMS} (got {shown(text)})", path=path)
        if len(text) > _MAX_TEXT:
            raise ConfigError(f"must be at most {_MAX_TEXT:,} characters (got {len(text):,}); use FIRST+COUNT", path=path)
        compact = "".join(text.split())
        if _IDS_TEXT.fullmatch(compact):
            parts = compact.split(",")
            return cls([_number(p, "a rollout id", f"{path}[{i}]") for i, p in enumerate(parts)], path=path)
        match = _RANGE_TEXT.fullmatch(compact)
        if match is None or not ("+" in compact or "%" in compact):
            raise ConfigError(f"must be {_FORMS} (got {shown(text)})", path=path)
        first, count, every = match.group("first"), match.group("count"), match.group("every")
        return cls(
            first=_number(first, "first", f"{path}.first") if first else 0,
            count=_number(count, "count", f"{path}.count") if count else None,
            every=_number(every, "every", f"{path}.every") if every else 1,
            path=path,
        )

    @classmethod
    def of(cls, value: object, *, path: str = "rollouts") -> Rollouts:
        """A selection from any of its forms: a :class:`Rollouts`, text (:meth:`parse`), one id, a
        list of ids, or a mapping ``{ids: [...]}`` / ``{first, count, every}``."""
        if isinstance(value, Rollouts):
            return value
        if isinstance(value, str):
            return cls.parse(value, path=path)
        if isinstance(value, int) and not isinstance(value, bool):
            return cls([value], path=path)
        if isinstance(value, (list, tuple, set, frozenset)):
            return cls(value, path=path)
        if isinstance(value, Mapping):
            valid = ("ids", "first", "count", "every")
            for key in value:
                if key not in valid:
                    raise unknown_key(key, valid, path=path)
            if "ids" in value:
                if set(value) != {"ids"}:
                    raise ConfigError("give either ids or first/count/every, not both", path=path)
                ids = value["ids"]
                if not isinstance(ids, (list, tuple)):
                    raise ConfigError(f"must be a list of rollout ids (got {shown(ids)})", path=f"{path}.ids")
                return cls(ids, path=f"{path}.ids")
            return cls(first=value.get("first"), count=value.get("count"), every=value.get("every"), path=path)
        raise ConfigError(f"must be {_FORMS}, a list of ids or a mapping (got {shown(value)})", path=path)

    def chosen(self, rollout_id: int) -> bool:
        """Whether rollout ``rollout_id`` is profiled."""
        _checked(rollout_id, "rollout_id", "rollout_id", least=0)
        if self.ids is not None:
            return rollout_id in self.ids
        offset = rollout_id - self.first
        if offset < 0 or offset % self.every:
            return False
        return self.count is None or offset // self.every < self.count

    def __contains__(self, rollout_id: object) -> bool:
        valid = isinstance(rollout_id, int) and not isinstance(rollout_id, bool) and 0 <= rollout_id <= MAX_ROLLOUT_ID
        return valid and self.chosen(rollout_id)  # type: ignore[arg-type]

    def __str__(self) -> str:
        if self.ids is not None:
            return ",".join(map(str, sorted(self.ids)))
        text = str(self.first)
        if self.count is not None or self.every == 1:
            text += f"+{'' if self.count is None else self.count}"
        return text + (f"%{self.every}" if self.every != 1 else "")


def _ids(ids: Iterable[int], path: str) -> frozenset[int]:
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise ConfigError(f"must be a list of rollout ids (got {shown(ids)})", path=path)
    found: set[int] = set()
    for i, value in enumerate(ids):
        if i >= _MAX_IDS:
            raise ConfigError(f"must list at most {_MAX_IDS:,} ids; choose a range with FIRST+COUNT or %EVERY", path=path)
        found.add(_checked(value, "a rollout id", f"{path}[{i}]", least=0))
    if not found:
        raise ConfigError(f"must list at least one rollout id ({_FORMS})", path=path)
    return frozenset(found)
