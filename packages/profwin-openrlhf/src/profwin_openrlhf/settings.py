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
``--profwin.timeline``    also record each profiled rollout's session timeline on every engine,
                          beside its window (``record: [timeline]``; no value)
========================= ======================================================================

The spec's ``output_dir`` (default: every trainer's, ``profwin.plugin.trainers.RolloutSettings``'s) is kept as written
and resolved in each process that uses it, ``~`` and ``$VARIABLES`` included: each engine writes
on its own node, and the trainer's copies land in the same path on the trainer's node. The
settings travel from the launcher to every Ray worker in their JSON form (core's one converter)
in the environment variable :data:`ENV` (Ray's ``runtime_env``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

from attrs import frozen

from profwin.plugin import ConfigError, checked, shown
from profwin.plugin.files import parse_json
from profwin.plugin.trainers import RolloutSettings

__all__ = ["ENV", "FLAGS", "KEYS", "SWITCHES", "OpenRLHFProfiling", "split_argv"]

ENV = "PROFWIN_OPENRLHF"
"""The environment variable that carries the settings (their JSON form) to OpenRLHF's Ray workers."""
KEYS = {"rollouts": "--profwin.rollouts", "spec": "--profwin.spec", "timeline": "--profwin.timeline"}
"""The launcher's flag for each field: what an error names."""
SWITCHES = ("--profwin.timeline",)
"""The launcher's flags that take no value."""
FLAGS = tuple(flag for flag in KEYS.values() if flag not in SWITCHES)
"""The launcher's flags that take a value (both needed when either is given)."""


@frozen(kw_only=True)
class OpenRLHFProfiling(RolloutSettings):
    """profwin-openrlhf's settings (rollout *k*: the *k*-th ``generate_samples`` call), checked
    however they are made; read from the launcher's flags by :func:`split_argv` and from
    :data:`ENV` by :meth:`from_env`, each error naming the flag."""

    def to_env(self) -> str:
        """The text :data:`ENV` carries: the settings' JSON form."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenRLHFProfiling | None:
        """The settings in :data:`ENV` (of ``environ``, default this process's), or ``None`` when it
        is unset; anything but :meth:`to_env`'s form is a :class:`~profwin.ConfigError` at :data:`ENV`."""
        if environ is not None and not isinstance(environ, Mapping):
            raise ConfigError(f"must be a mapping of environment variables (got {shown(environ)})", path="environ")
        text = (os.environ if environ is None else environ).get(ENV)
        if not text:
            return None
        try:
            data = parse_json(text, source="the JSON text")
        except ConfigError as exc:
            raise ConfigError(f"must be profwin-openrlhf's settings as JSON ({exc}; got {shown(text)})", path=ENV) from None
        return cls.of(data, path=ENV, keys=KEYS)


@checked
def split_argv(argv: Sequence[str]) -> tuple[OpenRLHFProfiling | None, list[str]]:
    """profwin's flags taken out of OpenRLHF's command line: the settings (``None`` when none is
    given) and the arguments left for OpenRLHF. ``--profwin.rollouts`` and ``--profwin.spec`` take a
    value, as ``--profwin.spec 2:6`` or ``--profwin.spec=2:6``; ``--profwin.timeline`` none."""
    values: dict[str, object] = {}
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        flag, eq, inline = arg.partition("=")
        if flag in SWITCHES:
            if eq and inline.lower() not in ("true", "1"):
                raise ConfigError(f"takes no value (got {shown(inline)})", path=flag)
            if flag in values:
                raise ConfigError("is given twice", path=flag)
            values[flag] = True
            i += 1
            continue
        if flag not in FLAGS:
            if arg.startswith("--profwin."):
                raise ConfigError(f"is not one of profwin-openrlhf's flags {list(KEYS.values())}", path=flag)
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
    return OpenRLHFProfiling.read({name: values[flag] for name, flag in KEYS.items() if flag in values}, keys=KEYS), rest
