"""Every public callable of profwin and its plugins, driven with bad arguments: what comes back is a
result or an error of profwin's family (:class:`profwin.ProfwinError`: an ``ArgumentTypeError``,
a ``TypeError`` of the family, for an argument of the wrong type, a ``ConfigError`` for a value
that breaks a rule), never a ``TypeError``, ``AttributeError``, ``RecursionError`` or another
exception from deep inside.

The callables are every name in ``profwin.__all__``, ``profwin.plugin.__all__``, ``profwin_traces.__all__``
and each plugin root's ``__all__`` (profwin-ray's root is driven in its own environment:
``ray/bad_arguments_check.py``). Each parameter is left at its default or given a bad value
(``bad_values.FIXED``, and drawn ints, text, lists and one-shot iterators). They run in a temporary folder, with stdout caught (``print_json``).
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import importlib
import inspect
import io
import os
import pkgutil
import warnings
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import profwin
import profwin.plugin

from .bad_values import FIXED

SURFACES = (
    "profwin",
    "profwin.plugin",
    *(f"profwin.plugin.{m.name}" for m in pkgutil.iter_modules(profwin.plugin.__path__)),  # its toolkits
    "profwin_traces",
    "profwin_vllm",
    "profwin_sglang",
    "profwin_npu",
    "profwin_memory",
    "profwin_verl",
    "profwin_slime",
    "profwin_openrlhf",
    "profwin_trl",
)
# Callables whose arguments are not profwin's to check: an Enum's lookup by value, argparse's
# own constructor (CliParser only adds how errors are reported).
NOT_DRIVEN = ("profwin_vllm.Mechanism", "profwin.plugin.cli.CliParser")
# Exceptions a callable documents besides profwin's family.
DOCUMENTED: dict[str, tuple[type[BaseException], ...]] = {
    "profwin.plugin.files.open_input": (FileNotFoundError,),  # "A missing file is FileNotFoundError"
    "profwin.plugin.files.read_input": (FileNotFoundError,),
    # argparse types: a value refused is argparse's own error, which the command line reports.
    **dict.fromkeys(("profwin.plugin.cli.step_arg", "profwin.plugin.cli.window_arg"), (argparse.ArgumentTypeError,)),
    **dict.fromkeys(
        (
            f"profwin_memory.{name}"
            for name in ("load_snapshot", "load_timeline", "summarize", "summarize_snapshot", "summarize_timeline")
        ),
        (FileNotFoundError,),
    ),
}
# Public functions that check their arguments by hand: the error family's own helpers, which sit
# below profwin.arguments, ``checked`` itself, and expand_user and spec_mapping, whose errors name
# the field their caller read the value from.
CHECK_THEMSELVES = (
    "profwin.plugin.shown",
    "profwin.plugin.unknown_key",
    "profwin.plugin.checked",
    "profwin.plugin.files.expand_user",
    "profwin.plugin.trainers.spec_mapping",
)
EXAMPLES = 40


def _public() -> dict[str, Callable[..., Any]]:
    """Each public callable once, under the first surface that exports it."""
    found: dict[str, Callable[..., Any]] = {}
    seen: set[int] = set()
    for surface in SURFACES:
        module = importlib.import_module(surface)
        for name in module.__all__:
            value = getattr(module, name)
            label = f"{surface}.{name}"
            if id(value) in seen or label in NOT_DRIVEN or not _drivable(value):
                continue
            seen.add(id(value))
            found[label] = value
    return found


def _drivable(value: object) -> bool:
    """A function or a class one constructs: not a constant, an exception, a protocol, an enum or a
    ``typing`` alias; and something to give bad values to (a parameter)."""
    if inspect.isclass(value):
        if issubclass(value, (BaseException, enum.Enum)) or getattr(value, "_is_protocol", False):
            return False
    elif not inspect.isroutine(value):
        return False
    return bool(_parameters(value))


def _parameters(call: Callable[..., Any]) -> list[inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in inspect.signature(call).parameters.values() if p.kind in kinds]


PUBLIC = _public()

bad_values = st.one_of(
    st.sampled_from(FIXED),
    st.text(max_size=8),
    st.integers(),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=4), st.floats()), max_size=4),
    # Fresh each draw, a one-shot iterator and a memoryview: one in FIXED would be spent, or
    # released (a memoryview is a context manager, which _close enters and leaves), by one call.
    st.builds(iter, st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=4)), max_size=3)),
    st.builds(memoryview, st.binary(max_size=4)),
)


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Run in a folder of its own: a bad value may still be a usable file name."""
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("bad-arguments"))
    try:
        yield
    finally:
        os.chdir(here)


def call_badly(label: str, call: Callable[..., Any], data: st.DataObject) -> None:
    """One call of ``call``, each parameter at its default or a bad value; a result is closed again."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True  # positional-only parameters are given in order, up to the first left out
    for parameter in _parameters(call):
        only_positional = parameter.kind is inspect.Parameter.POSITIONAL_ONLY
        if parameter.default is not inspect.Parameter.empty and data.draw(st.booleans(), label=f"{parameter.name}: default"):
            positional = positional and not only_positional
            continue
        if only_positional and not positional:
            continue
        value = data.draw(bad_values, label=parameter.name)
        if callable(value) and "Callable" in str(parameter.annotation):
            value = _given(value)
        if only_positional:
            args.append(value)
        else:
            kwargs[parameter.name] = value
    allowed = (profwin.ProfwinError, RaisedByTheGivenCallable, *DOCUMENTED.get(label, ()))
    # Warnings are kept here: one may carry a bad value (a lone surrogate), which pytest-xdist
    # cannot send from its worker (an INTERNALERROR in a loaded run, profwin.plugin.warn("\ud800")).
    with contextlib.suppress(allowed), contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        _close(call(*args, **kwargs))


class RaisedByTheGivenCallable(Exception):
    """What a callable the test gave for a ``Callable`` parameter raised when the callee called it:
    its own error, not the callee's (``fan_out(float, [None])`` runs ``float(None)`` as asked)."""


def _given(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, with whatever it raises marked as its own (:class:`RaisedByTheGivenCallable`)."""

    def given(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Exception as exc:
            raise RaisedByTheGivenCallable(f"{function!r} raised {exc!r}") from exc

    return given


def _close(result: Any) -> None:
    """Nothing a call returned stays open: a file is closed, a context manager entered and left."""
    if isinstance(result, io.IOBase):
        result.close()
    elif (
        isinstance(result, contextlib.AbstractContextManager) and not isinstance(result, PurePath) and not inspect.isclass(result)
    ):
        with result:
            pass


@pytest.mark.usefixtures("elsewhere")
@pytest.mark.parametrize("label", sorted(PUBLIC))
# No shrinking: the values are few and named, and shrinking 145 callables' failures takes minutes.
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_bad_arguments_raise_profwins_errors_only(label: str, data: st.DataObject) -> None:
    call_badly(label, PUBLIC[label], data)


def test_every_public_function_is_checked() -> None:
    """The mechanism, not the driver's luck, is what holds: each function goes through ``checked``,
    and the hints of every checked callable resolve (a check is never skipped for one that cannot)."""
    functions = [label for label, call in PUBLIC.items() if inspect.isroutine(call) and label not in CHECK_THEMSELVES]
    assert len(functions) >= 100
    assert [label for label in functions if not getattr(PUBLIC[label], "__profwin_checked__", False)] == []
    for call in PUBLIC.values():
        checks = getattr(call.__init__ if inspect.isclass(call) else call, "__profwin_checked__", None)
        if callable(checks):
            checks()  # resolves every hint, as the first call does: an unresolvable one raises


def test_every_surface_is_driven() -> None:
    assert len(PUBLIC) >= 140
    assert {"profwin.load_spec", "profwin.plugin.trainers.plain", "profwin_verl.build_vllm_profiler_args"} <= set(PUBLIC)
