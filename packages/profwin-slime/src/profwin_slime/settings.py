"""What profwin-slime reads from slime's ``args``: which rollouts, the spec, and the function it wraps.

slime hands every rollout function its parsed ``args`` (an ``argparse.Namespace``). Its stock
``train.py`` parses only slime's, Megatron's and SGLang's flags (Megatron's parser ignores
unknown flags without a word), and ``--custom-config-path FILE.yaml`` sets every key of that YAML
file on ``args`` ("the YAML config for custom function arguments"): that is where profwin's
settings go. An entry point of your own may add them as flags instead
(``parse_args(add_custom_arguments=profwin_slime.add_arguments)``). Read from slime at commit
624b824 (the release range: ``profwin_slime._plugin.PLUGIN.requires``): ``slime/utils/arguments.py``
(``--rollout-function-path``, ``--eval-function-path``, ``--custom-config-path``, ``parse_args``),
``slime/ray/rollout.py`` (``RolloutManager``), ``slime/backends/sglang_utils/arguments.py``
(``--sglang-router-ip/port``).

========================== =====================================================================
``profwin_rollouts``       which rollouts (``"1,3"``, ``"3+4"``, ``"%10"``, a list, one id); unset:
                           profiling is off and the wrapped function is called as it is
``profwin_spec``           the window as text (``"20:80"``), or a profwin spec as a mapping or its
                           JSON text (``{"window": "20:80", "output_dir": ..., "activities": ...}``);
                           it must say the window
``profwin_eval``           also profile evaluation rollouts (default false)
``profwin_timeline``       also record each profiled rollout's session timeline beside its window
                           (``record: [timeline]``; default false): ``profwin timeline`` reads it
``profwin_rollout_function`` the function profwin-slime calls (default slime's own default,
                           :data:`DEFAULT_ROLLOUT_FUNCTION`)
========================== =====================================================================
"""

from __future__ import annotations

import argparse
from typing import Any

from attrs import field, frozen

from profwin.plugin import ConfigError, checked, flag, shown
from profwin.plugin.trainers import RolloutSettings

__all__ = [
    "DEFAULT_ROLLOUT_FUNCTION",
    "FULLY_ASYNC",
    "KEYS",
    "SlimeProfiling",
    "add_arguments",
    "rollout_function",
]

DEFAULT_ROLLOUT_FUNCTION = "slime.rollout.sglang_rollout.generate_rollout"
"""slime's default ``--rollout-function-path``: what profwin-slime calls unless told otherwise."""
FULLY_ASYNC = "slime.rollout.fully_async_rollout.generate_rollout_fully_async"
"""slime's fully-async rollout: a background worker keeps generations in flight across rollout
boundaries, so no window on the engines can hold one rollout alone (not profiled)."""
KEYS = {
    "rollouts": "profwin_rollouts",
    "spec": "profwin_spec",
    "evaluation": "profwin_eval",
    "timeline": "profwin_timeline",
    "rollout_function": "profwin_rollout_function",
}
"""The key on slime's ``args`` of each field: what an error names."""


def _check_function(_: object, __: object, value: object) -> None:
    _function_path(value, path="rollout_function")
    if value == FULLY_ASYNC:
        raise ConfigError(
            f"{value} keeps generations in flight across rollout boundaries (its background worker), so a window on the "
            "engines would hold other rollouts' requests too: profwin-slime does not profile it "
            "(use slime.rollout.sglang_rollout.generate_rollout, with train.py or train_async.py)",
            path="rollout_function",
        )


@frozen(kw_only=True)
class SlimeProfiling(RolloutSettings):
    """profwin-slime's settings, read from slime's ``args`` by :meth:`from_args` (each error naming
    the key there) and checked however they are made.

    Attributes:
        rollouts: which rollouts are profiled.
        spec: what each profiled rollout records (window, activities, ``output_dir``).
        timeout: seconds each call to a worker may take.
        evaluation: evaluation rollouts are profiled too (their files say ``eval<id>``).
        rollout_function: the dotted path of the function profwin-slime calls; slime's
            fully-async rollout is not profiled (:data:`FULLY_ASYNC`).
    """

    evaluation: bool = field(default=False, validator=flag)
    rollout_function: str = field(default=DEFAULT_ROLLOUT_FUNCTION, validator=_check_function)

    @classmethod
    def from_args(cls, args: Any) -> SlimeProfiling | None:
        """The settings on ``args`` (slime's ``Namespace``), or ``None`` when ``profwin_rollouts``
        is unset: profiling is off. Raises :class:`~profwin.ConfigError` naming the key at fault."""
        if getattr(args, KEYS["rollouts"], None) is None:
            return None
        values = {name: getattr(args, key, None) for name, key in KEYS.items()}
        values["rollout_function"] = rollout_function(args)
        return cls.read({name: value for name, value in values.items() if value is not None}, keys=KEYS)


def _function_path(value: object, *, path: str) -> str:
    if not isinstance(value, str) or "." not in value.strip(".") or any(not part.isidentifier() for part in value.split(".")):
        raise ConfigError(f"must be a dotted path like 'package.module.function' (got {shown(value)})", path=path)
    if value.split(".")[0] == "profwin_slime":
        raise ConfigError(
            f"is profwin-slime itself ({value}): name the function it should call (default {DEFAULT_ROLLOUT_FUNCTION})",
            path=path,
        )
    return value


def rollout_function(args: Any) -> str:
    """The dotted path of the function profwin-slime calls (``args.profwin_rollout_function``,
    default :data:`DEFAULT_ROLLOUT_FUNCTION`), checked: a dotted path, never profwin-slime itself."""
    return _function_path(
        getattr(args, KEYS["rollout_function"], None) or DEFAULT_ROLLOUT_FUNCTION, path=KEYS["rollout_function"]
    )


@checked
def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--profwin-rollouts``, ``--profwin-spec``, ``--profwin-eval``, ``--profwin-timeline``
    and ``--profwin-rollout-function`` to slime's parser: for an entry point of your own,
    ``slime.utils.arguments.parse_args(add_custom_arguments=profwin_slime.add_arguments)``
    (slime's stock ``train.py`` ignores unknown flags: give the settings in
    ``--custom-config-path`` there)."""
    group = parser.add_argument_group("profwin (profwin-slime)")
    group.add_argument(
        "--profwin-rollouts", default=None, help="rollouts to profile: '1,3', '3+4' (4 from 3), '%%10' (every 10th)"
    )
    group.add_argument("--profwin-spec", default=None, help="the window ('20:80') or a profwin spec as JSON")
    group.add_argument("--profwin-eval", action="store_true", default=None, help="profile evaluation rollouts too")
    group.add_argument(
        "--profwin-timeline", action="store_true", default=None, help="also record each profiled rollout's session timeline"
    )
    group.add_argument(
        "--profwin-rollout-function", default=None, help=f"the function profwin calls (default {DEFAULT_ROLLOUT_FUNCTION})"
    )
    return parser
