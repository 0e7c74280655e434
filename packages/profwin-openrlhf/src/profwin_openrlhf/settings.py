"""What profwin-openrlhf is told: which rollouts, and the spec each one records.

Two flags on OpenRLHF's command line, read (and removed) by the launcher
``python -m profwin_openrlhf.train_ppo_ray`` before OpenRLHF parses the rest, in OpenRLHF's own
``--group.name`` style:

========================= ======================================================================
``--profwin.rollouts R``  which rollouts: ``"1"``, ``"1,3"``, ``"3+4"``, ``"%10"``
                          (:class:`profwin.Rollouts`); rollout *k* is the *k*-th call of
                          ``SamplesGenerator.generate_samples`` of the run, from 0
``--profwin.spec S``      the window (``"2:6"``, ``"2:6 tokens"``) or a profwin spec as JSON
                          (``{"window": "2:6", "output_dir": "/shared/traces", ...}``); it must
                          say the window
========================= ======================================================================

The spec's ``output_dir`` (default :data:`DEFAULT_OUTPUT_DIR`) is kept as written and resolved in
each process that uses it, ``~`` and ``$VARIABLES`` included: each engine writes on its own node,
and the trainer's copies land in the same path on the trainer's node. The settings travel from the
launcher to every Ray worker as JSON in the environment variable :data:`ENV` (Ray's
``runtime_env``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import field, frozen

from profwin.plugin import (
    FORMAT_KEY,
    ConfigError,
    Format,
    ProfileSpec,
    Rollouts,
    checked,
    parse_json,
    shown,
    spec_from_mapping,
    spec_mapping,
)

__all__ = ["DEFAULT_OUTPUT_DIR", "ENV", "FLAGS", "SETTINGS_FORMAT", "OpenRLHFProfiling", "split_argv"]

DEFAULT_OUTPUT_DIR = "/tmp/profwin-rollouts"
"""Where each engine writes its traces when the spec names no ``output_dir`` (on its node), and
where the trainer's copies of them land (on the trainer's node)."""
ENV = "PROFWIN_OPENRLHF"
"""The environment variable that carries the settings (JSON) to OpenRLHF's Ray workers."""
FLAGS = ("--profwin.rollouts", "--profwin.spec")
"""The launcher's flags."""
SETTINGS_FORMAT = Format("profwin-openrlhf.settings", version=2, package="profwin-openrlhf")
"""What :data:`ENV` carries: ``rollouts`` and ``spec`` (version 1: the same without ``"format"``)."""


def _spec_data(value: object, path: str) -> dict[str, Any]:
    """The spec's mapping form, checked now by core's one reader of a trainer's spec setting."""
    return spec_mapping(value, path=path, output_dir=DEFAULT_OUTPUT_DIR)


def _rollouts(value: object) -> Rollouts:
    return Rollouts.of(value, path="--profwin.rollouts")


def _spec(value: object) -> dict[str, Any]:
    return _spec_data(value, "--profwin.spec")


@frozen(kw_only=True)
class OpenRLHFProfiling:
    """profwin-openrlhf's settings, checked however they are made (:meth:`of`, the constructor,
    :meth:`from_json`): a bad value is a :class:`~profwin.ConfigError` naming the flag, the value
    and the rule.

    Attributes:
        rollouts: which rollouts are profiled (rollout *k*: the *k*-th ``generate_samples`` call).
        spec: the spec's mapping form, its ``output_dir`` as written (see :meth:`spec_here`).
    """

    rollouts: Rollouts = field(converter=_rollouts)
    spec: Mapping[str, Any] = field(converter=_spec)

    @classmethod
    def of(cls, rollouts: object, spec: object) -> OpenRLHFProfiling:
        """Settings from the two values, checked; a :class:`~profwin.ConfigError` names the flag at fault."""
        return cls(rollouts=rollouts, spec=spec)

    def spec_here(self) -> ProfileSpec:
        """The spec in this process: ``output_dir`` with ``~`` and ``$VARIABLES`` resolved here."""
        data = dict(self.spec)
        data["output_dir"] = os.path.expanduser(os.path.expandvars(str(data["output_dir"])))
        return spec_from_mapping(data, path="--profwin.spec")

    def to_json(self) -> str:
        """The form :data:`ENV` carries (:data:`SETTINGS_FORMAT`)."""
        return json.dumps(SETTINGS_FORMAT.stamp({"rollouts": str(self.rollouts), "spec": dict(self.spec)}))

    @classmethod
    def from_json(cls, text: object) -> OpenRLHFProfiling:
        """The settings :meth:`to_json` wrote (version 1: without ``"format"``), checked; anything
        else is a :class:`~profwin.ConfigError` at :data:`ENV`."""
        if not isinstance(text, str):
            raise ConfigError(f"must be profwin-openrlhf's settings as JSON text (got {shown(text)})", path=ENV)
        try:
            data = parse_json(text, source="the JSON text")
        except ConfigError as exc:
            raise ConfigError(f"must be profwin-openrlhf's settings as JSON ({exc}; got {shown(text)})", path=ENV) from None
        if not isinstance(data, dict) or set(data) - {FORMAT_KEY} != {"rollouts", "spec"}:
            raise ConfigError(f"must be an object with 'rollouts' and 'spec' (got {shown(data)})", path=ENV)
        try:
            SETTINGS_FORMAT.check(data)
        except ConfigError as exc:
            raise exc.at(ENV) from None
        return cls.of(data["rollouts"], data["spec"])

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenRLHFProfiling | None:
        """The settings in :data:`ENV`, or ``None`` when it is unset."""
        if environ is not None and not isinstance(environ, Mapping):
            raise ConfigError(f"must be a mapping of environment variables (got {shown(environ)})", path="environ")
        text = (os.environ if environ is None else environ).get(ENV)
        return None if not text else cls.from_json(text)


@checked
def split_argv(argv: Sequence[str]) -> tuple[OpenRLHFProfiling | None, list[str]]:
    """profwin's flags taken out of OpenRLHF's command line: the settings (``None`` when neither
    flag is given) and the arguments left for OpenRLHF. Both flags take a value, as
    ``--profwin.spec 2:6`` or ``--profwin.spec=2:6``."""
    values: dict[str, str] = {}
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        flag, eq, inline = arg.partition("=")
        if flag not in FLAGS:
            if arg.startswith("--profwin."):
                raise ConfigError(f"is not one of profwin-openrlhf's flags {list(FLAGS)}", path=flag)
            rest.append(arg)
            i += 1
            continue
        if flag in values:
            raise ConfigError("is given twice", path=flag)
        if eq:
            values[flag] = inline
            i += 1
        elif i + 1 < len(args):
            values[flag] = args[i + 1]
            i += 2
        else:
            raise ConfigError("needs a value", path=flag)
    if not values:
        return None, rest
    missing = [f for f in FLAGS if f not in values]
    if missing:
        raise ConfigError(f"is needed with {', '.join(sorted(values))}", path=missing[0])
    return OpenRLHFProfiling.of(values["--profwin.rollouts"], values["--profwin.spec"]), rest
