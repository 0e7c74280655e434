"""The engine runtime: what runs a window on live engines, from outside them and inside them.

How it works, and why: docs/internals.md, ``profwin.runtime``.
"""
