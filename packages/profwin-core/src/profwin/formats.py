"""The versions of the files profwin writes and reads back: one key, one check.

How it works, and why: docs/internals.md, ``profwin.formats``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from profwin.errors import ConfigError, shown

__all__ = ["FORMAT_KEY", "Format"]

FORMAT_KEY = "format"
"""The key of a file's format and version (``"profwin.state/2"``)."""

_TAG = re.compile(r"([a-z][a-z0-9_.-]{0,63})/([1-9][0-9]{0,8})")


@frozen
class Format:
    """One file format profwin writes and reads back.

    Attributes:
        name: the format's name (``profwin.state``), the same in every version.
        version: the version this profwin writes, the newest it reads.
        oldest: the oldest version it still reads (files written without a version are 1).
        package: the distribution whose upgrade reads newer versions (named in the error).
    """

    name: str
    version: int
    oldest: int = 1
    package: str = "profwin-core"

    @property
    def tag(self) -> str:
        """What a file of this version holds under ``"format"``: ``name/version``."""
        return f"{self.name}/{self.version}"

    @property
    def reads(self) -> str:
        """The versions read, for a message: ``1`` or ``1 to 3``."""
        return str(self.version) if self.oldest == self.version else f"{self.oldest} to {self.version}"

    def stamp(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` with this format's tag first."""
        return {FORMAT_KEY: self.tag, **{k: v for k, v in data.items() if k != FORMAT_KEY}}

    def check(self, data: Mapping[str, Any]) -> int:
        """The version of the document ``data`` (a mapping read from a file): 1 when it has no
        ``"format"``; a :class:`ConfigError` located at ``format`` when it is another format's, a
        version this profwin does not read, or not a format tag at all."""
        if FORMAT_KEY not in data:
            version = 1
        else:
            tag = data[FORMAT_KEY]
            match = _TAG.fullmatch(tag) if isinstance(tag, str) else None
            if match is None:
                raise ConfigError(f"must be a format tag like {self.tag!r} (got {shown(tag)})", path=FORMAT_KEY)
            if match.group(1) != self.name:
                raise ConfigError(f"is a {match.group(1)} file, not a {self.name} file (got {shown(tag)})", path=FORMAT_KEY)
            version = int(match.group(2))
        if version > self.version:
            raise ConfigError(
                f"is {self.name} version {version}, written by a newer profwin; this one reads versions {self.reads}: "
                f"upgrade it (pip install -U {self.package})",
                path=FORMAT_KEY,
            )
        if version < self.oldest:
            raise ConfigError(
                f"is {self.name} version {version}, written by an older profwin; this one reads versions {self.reads}: "
                "write it again with this profwin",
                path=FORMAT_KEY,
            )
        return version
