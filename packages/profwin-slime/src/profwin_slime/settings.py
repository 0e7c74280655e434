"""What profwin-slime reads from slime's ``args``: which rollouts, the spec, and the function it wraps.

slime hands every rollout function its parsed ``args`` (an ``argparse.Namespace``). Its stock
``train.py`` parses only slime's, Megatron's and SGLang's flags (Megatron's parser ignores
unknown flags without a word), and ``--custom-config-path FILE.yaml`` sets every key of that YAML
file on ``args`` ("the YAML config for custom function arguments"): that is where profwin's
settings go. An entry point of your own may add them as flags instead
(``parse_args(add_custom_arguments=profwin_slime.add_arguments)``). Read from slime at
:data:`SLIME_COMMIT`: ``slime/utils/arguments.py`` (``--rollout-function-path``,
``--eval-function-path``, ``--custom-config-path``, ``parse_args``), ``slime/ray/rollout.py``
(``RolloutManager``), ``slime/backends/sglang_utils/arguments.py`` (``--sglang-router-ip/port``).

========================== =====================================================================
``profwin_rollouts``       which rollouts (``"1,3"``, ``"3+4"``, ``"%10"``, a list, one id); unset:
                           profiling is off and the wrapped function is called as it is
``profwin_spec``           the window as text (``"20:80"``), or a profwin spec as a mapping or its
                           JSON text (``{"window": "20:80", "output_dir": ..., "activities": ...}``);
                           it must say the window
``profwin_eval``           also profile evaluation rollouts (default false)
``profwin_rollout_function`` the function profwin-slime calls (default slime's own default,
                           :data:`DEFAULT_ROLLOUT_FUNCTION`)
========================== =====================================================================
"""

from __future__ import annotations

import argparse
from typing import Any

from attrs import field, frozen

from profwin.plugin import ConfigError, JsonForm, ProfileSpec, Rollouts, checked, shown, spec_from_mapping, spec_mapping

__all__ = [
    "DEFAULT_OUTPUT_DIR",
    "DEFAULT_ROLLOUT_FUNCTION",
    "FULLY_ASYNC",
    "SLIME_COMMIT",
    "SlimeProfiling",
    "add_arguments",
    "rollout_function",
]

SLIME_COMMIT = "624b824a898ab0ec1fcb4d373004c7f3852bf515"
"""The slime commit whose source profwin-slime was written against (THUDM/slime, 2026-08-21)."""
DEFAULT_ROLLOUT_FUNCTION = "slime.rollout.sglang_rollout.generate_rollout"
"""slime's default ``--rollout-function-path``: what profwin-slime calls unless told otherwise."""
FULLY_ASYNC = "slime.rollout.fully_async_rollout.generate_rollout_fully_async"
"""slime's fully-async rollout: a background worker keeps generations in flight across rollout
boundaries, so no window on the engines can hold one rollout alone (refused)."""
DEFAULT_OUTPUT_DIR = "/tmp/profwin-rollouts"
"""Where each worker writes its traces when ``profwin_spec`` names no ``output_dir`` (on the
worker's node; slime's ``tools/profile_rollout.py`` uses ``/tmp/sglang_profile`` the same way)."""


def _as_rollouts(value: object) -> Rollouts:
    return Rollouts.of(value, path="profwin_rollouts")


def _as_spec(value: object) -> ProfileSpec:
    return value if isinstance(value, ProfileSpec) else _spec(value)


def _check_function(_: object, __: object, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(
            f"must be a dotted path like 'package.module.function' (got {shown(value)})", path="profwin_rollout_function"
        )
    rollout_function(argparse.Namespace(profwin_rollout_function=value))


def _check_flag(_: object, __: object, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false (got {shown(value)})", path="profwin_eval")


@frozen(kw_only=True)
class SlimeProfiling(JsonForm):
    """profwin-slime's settings, read from slime's ``args`` by :meth:`from_args` and checked
    however they are made (the constructor too): a bad value is a :class:`~profwin.ConfigError`
    naming the key (``profwin_spec``), the value and the rule.

    Attributes:
        rollouts: which rollouts are profiled.
        spec: what each profiled rollout records (window, activities, ``output_dir``).
        evaluation: evaluation rollouts are profiled too (their files say ``eval<id>``).
        rollout_function: the dotted path of the function profwin-slime calls.
    """

    rollouts: Rollouts = field(converter=_as_rollouts)
    spec: ProfileSpec = field(converter=_as_spec)
    evaluation: bool = field(default=False, validator=_check_flag)
    rollout_function: str = field(default=DEFAULT_ROLLOUT_FUNCTION, validator=_check_function)

    @classmethod
    def from_args(cls, args: Any) -> SlimeProfiling | None:
        """The settings on ``args`` (slime's ``Namespace``), or ``None`` when ``profwin_rollouts``
        is unset: profiling is off. Raises :class:`~profwin.ConfigError` naming the key at fault."""
        rollouts = getattr(args, "profwin_rollouts", None)
        if rollouts is None:
            return None
        evaluation = getattr(args, "profwin_eval", None)
        if evaluation is None:
            evaluation = False
        return cls(
            rollouts=Rollouts.of(rollouts, path="profwin_rollouts"),
            spec=_spec(getattr(args, "profwin_spec", None)),
            evaluation=evaluation,
            rollout_function=rollout_function(args),
        )


def _spec(value: object) -> ProfileSpec:
    path = "profwin_spec"
    if value is None:
        raise ConfigError("must say the window to record in each profiled rollout, e.g. '20:80'", path=path)
    return spec_from_mapping(spec_mapping(value, path=path, output_dir=DEFAULT_OUTPUT_DIR), path=path)


def rollout_function(args: Any) -> str:
    """The dotted path of the function profwin-slime calls (``args.profwin_rollout_function``,
    default :data:`DEFAULT_ROLLOUT_FUNCTION`), checked: never profwin-slime itself, never slime's
    fully-async rollout (:data:`FULLY_ASYNC`)."""
    path = getattr(args, "profwin_rollout_function", None) or DEFAULT_ROLLOUT_FUNCTION
    if not isinstance(path, str) or "." not in path.strip(".") or any(not part.isidentifier() for part in path.split(".")):
        raise ConfigError(
            f"must be a dotted path like 'package.module.function' (got {shown(path)})", path="profwin_rollout_function"
        )
    if path.split(".")[0] == "profwin_slime":
        raise ConfigError(
            f"is profwin-slime itself ({path}): name the function it should call (default {DEFAULT_ROLLOUT_FUNCTION})",
            path="profwin_rollout_function",
        )
    if path == FULLY_ASYNC:
        raise ConfigError(
            f"{path} keeps generations in flight across rollout boundaries (its background worker), so a window on the "
            "engines would hold other rollouts' requests too: profwin-slime does not profile it "
            "(use slime.rollout.sglang_rollout.generate_rollout, with train.py or train_async.py)",
            path="profwin_rollout_function",
        )
    return path


@checked
def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--profwin-rollouts``, ``--profwin-spec``, ``--profwin-eval`` and
    ``--profwin-rollout-function`` to slime's parser: for an entry point of your own,
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
        "--profwin-rollout-function", default=None, help=f"the function profwin calls (default {DEFAULT_ROLLOUT_FUNCTION})"
    )
    return parser
