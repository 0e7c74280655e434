"""The versions of the files profwin writes and reads back: one key, one check.

Every file format profwin writes for itself to read later (a session's state, a router's record,
a trace's provenance, a collection's manifest, profwin-memory's timelines and signatures) carries
its name and version under one key, ``"format"``: ``"profwin.state/2"``. A reader declares the
:class:`Format` it reads, and :meth:`Format.check` gives the version a file has:

- a file without the key was written before formats had versions: it is version 1;
- a version from :attr:`~Format.oldest` to :attr:`~Format.version` is read (the reader takes
  each older shape it knows);
- a newer version, or one older than the reader still takes, is a :class:`ConfigError` that
  says which versions this profwin reads and what to do; another format's name (a state file
  where a manifest belongs) is one too.

::

    STATE = Format("profwin.state", version=2)
    data = {"format": STATE.tag, ...}          # writing
    version = STATE.check(data)                # reading: 1 or 2, else ConfigError at "format"

This module is in core's bottom layer: it imports nothing from profwin but the errors.
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
