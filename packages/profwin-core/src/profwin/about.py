"""This profwin-core's own version, read once from its installed metadata.

A bottom-layer module, so the HTTP client (its ``User-Agent``) and the facade read the version
without importing the ``profwin`` package from inside it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("profwin-core")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = "0.0.0+unknown"
