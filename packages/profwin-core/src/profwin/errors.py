"""The exceptions profwin raises: one family under :class:`ProfwinError`.

How it works, and why: docs/internals.md, ``profwin.errors``.
"""

from __future__ import annotations

import difflib

SHOWN_CHARS = 80
"""The most characters of a user's value an error message quotes (see :func:`shown`)."""


def _located(path: str, message: str) -> str:
    """``path: message``, a path built from a user's keys cut as :func:`shown` cuts a value (its
    start and its end, where the field is, kept)."""
    if not path:
        return message
    if len(path) > 2 * SHOWN_CHARS:
        path = f"{path[: SHOWN_CHARS // 2]}…{path[-SHOWN_CHARS // 2 :]} ({len(path):,}-character path)"
    return f"{path}: {message}"


class ProfwinError(Exception):
    """Base of every error profwin raises on purpose; its message is meant for the user as it is.

    ``path`` locates the problem when there is a place to name (a config key such as
    ``options.vllm.mode``, or a trace file); empty otherwise.
    """

    path: str = ""


class ConfigError(ProfwinError, ValueError):
    """A profiling configuration is invalid.

    The message always names the field (as a path such as
    ``profiler.tool_config.torch.contents[2]``), the offending value and the rule it breaks.
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        self.path = path
        self.reason = message
        self.errors: list[ConfigError] = []
        super().__init__(_located(path, message))

    @classmethod
    def combine(cls, errors: list[ConfigError]) -> ConfigError:
        """One error for several; ``errors`` keeps each (``profwin validate`` lists them all)."""
        if len(errors) == 1:
            return errors[0]
        combined = cls(f"{len(errors)} errors:\n" + "\n".join(f"  {e}" for e in errors))
        combined.errors = list(errors)
        return combined

    def at(self, prefix: str) -> ConfigError:
        """Return the same error located under ``prefix`` (used while descending a config)."""
        if not prefix:
            return self
        if self.errors:
            return ConfigError.combine([e.at(prefix) for e in self.errors])
        path = f"{prefix}.{self.path}" if self.path and not self.path.startswith("[") else f"{prefix}{self.path}"
        return ConfigError(self.reason, path=path)


class ArgumentTypeError(ProfwinError, TypeError):
    """A public callable was given an argument of the wrong type (:func:`profwin.plugin.checked`).

    One line naming the parameter (``path``, with the item where it is one: ``paths[1]``,
    ``data key 1``), the value as :func:`shown` quotes it and the type it must have:
    ``name: must be str (got None)``. A ``TypeError``, as Python's own for a wrong type; a value
    of the right type that breaks a rule is a :class:`ConfigError`.
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        self.path = path
        self.reason = message
        super().__init__(_located(path, message))


def shown(value: object, *, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters with its full length noted.

    Every message that quotes a user's value goes through this, so a 5,000-character window
    bound or key comes back as one readable line, and a value ``repr`` cannot show (an int past
    Python's 4,300-digit limit, a list nested past the stack) is described instead.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ConfigError(f"must be an int (got {type(limit).__name__})", path="limit")
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits()
        text = f"<{type(value).__name__} of {value.bit_length() if isinstance(value, int) else '?'} bits>"
    except RecursionError:
        text = f"<{type(value).__name__} nested too deep to show>"
    except Exception as exc:  # a __repr__ of the value's own that fails: the message is still made
        text = f"<{type(value).__name__} whose repr() fails: {type(exc).__name__}>"
    if len(text) <= max(limit, 2):
        return text
    return f"{text[: max(limit, 2) - 1]}… ({len(text):,} characters)"


def unknown_key(key: object, valid: list[str] | tuple[str, ...], *, path: str = "") -> ConfigError:
    """The error for a key outside ``valid``, suggesting the closest valid one."""
    if not isinstance(path, str):
        raise ConfigError(f"must be a str (got {type(path).__name__})", path="path")
    if not isinstance(valid, (list, tuple)) or not all(isinstance(name, str) for name in valid):
        raise ConfigError(f"must be a list of key names (got {shown(valid)})", path="valid")
    names = list(valid)
    close = difflib.get_close_matches(key[:SHOWN_CHARS] if isinstance(key, str) else shown(key), names, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown key {shown(key)} (valid keys: {', '.join(names)}){hint}", path=path)


class UnreadableInput(ConfigError):
    """An input file cannot be read at all (missing, not permitted, not a regular file): an error
    of the command line (``profwin validate`` exits 2 for it, 1 for a file that reads but is wrong)."""


class ProfilingDisabled(ConfigError):
    """The config is valid but profiles nothing (verl's ``enable: false``, ``tool: null``,
    ``steps: null``), so it has no spec; ``profwin validate`` reports it as valid."""


class PluginError(ProfwinError, RuntimeError):
    """A plugin is unknown, failed to import, or lacks the library it drives."""


class Terminated(BaseException):
    """SIGTERM arrived; the ``profwin`` commands raise it in the main thread so files being
    written are removed. A BaseException, like KeyboardInterrupt: ``except Exception`` must not
    swallow it."""


class WindowWarning(UserWarning):
    """A session ended without recording all of its window (or any of it)."""
