"""This profwin-core's own version, read once from its installed metadata.

A bottom-layer module, so the HTTP client (its ``User-Agent``) and the facade read the version
without importing the ``profwin`` package from inside it.
"""

from __future__ import annotations

from profwin.installed import version

__all__ = ["__version__"]

__version__ = version("profwin-core") or "0.0.0+unknown"  # "unknown": a source tree without metadata
