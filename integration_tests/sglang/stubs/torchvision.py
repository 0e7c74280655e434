"""Import-only stand-in for torchvision: a TEST-HARNESS SHIM for the sglang integration tests.

SGLang 0.5.23 imports ``torchvision.transforms`` at module level on the path to its request types
(io_struct -> schedule_batch -> ... -> multimodal/internvl_utils), although a text-only Llama never
uses it, and PyPI's torchvision cannot load beside the CPU torch build these machines have. The
tests put this folder on PYTHONPATH of the SGLang server they start: every ``torchvision.*``
module imports as an empty package, every attribute is a placeholder that raises if called, and
``InterpolationMode`` is a real enum because SGLang reads its members at import time.
It is never shipped and never installed anywhere.
"""

import enum

from _import_only import install

__version__ = "0.0.0+stub"
__path__: list[str] = []


class InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


class _Placeholder:
    """Stands for any torchvision class or function; usable as a base class, fails when called."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("torchvision stub called: the sglang test harness has no real torchvision")


def _attribute(name: str) -> object:
    if name == "InterpolationMode":
        return InterpolationMode
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Placeholder,), {})


def __getattr__(name: str) -> object:
    return _attribute(name)


install("torchvision", lambda module, name: _attribute(name))
