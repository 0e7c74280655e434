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

from attrs import frozen

from profwin.plugin import ConfigError, ProfileSpec, Rollouts, Window, checked, shown, spec_from_mapping

__all__ = ["DEFAULT_OUTPUT_DIR", "ENV", "FLAGS", "SWITCHES", "OpenRLHFProfiling", "split_argv"]

DEFAULT_OUTPUT_DIR = "/tmp/profwin-rollouts"
"""Where each engine writes its traces when the spec names no ``output_dir`` (on its node), and
where the trainer's copies of them land (on the trainer's node)."""
ENV = "PROFWIN_OPENRLHF"
"""The environment variable that carries the settings (JSON) to OpenRLHF's Ray workers."""
FLAGS = ("--profwin.rollouts", "--profwin.spec")
"""The launcher's flags that take a value."""
SWITCHES = ("--profwin.timeline",)
"""The launcher's flags that take none."""


def _spec_data(value: object, path: str) -> dict[str, Any]:
    """The spec's mapping form, checked now (a bad window fails at launch, not in a worker)."""
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("{"):
            window = Window.parse(text, field_name=path)
            return {"window": str(window), "output_dir": DEFAULT_OUTPUT_DIR}
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"must be a window like '2:6' or a spec as JSON ({exc}; got {shown(text)})", path=path) from None
    if not isinstance(value, Mapping):
        raise ConfigError(f"must be a window like '2:6' or a spec mapping (got {shown(value)})", path=path)
    if "window" not in value and "profile_token_start" not in value:
        raise ConfigError(f'must say the window to record, e.g. {{"window": "2:6"}} (got keys {sorted(value)})', path=path)
    data = dict(value)
    data.setdefault("output_dir", DEFAULT_OUTPUT_DIR)
    if not isinstance(data["output_dir"], str) or not data["output_dir"].strip():
        raise ConfigError(f"must be a folder's path (got {shown(data['output_dir'])})", path=f"{path}.output_dir")
    spec_from_mapping(data, path=path)  # every other key checked by core's one reader
    return data


@frozen(kw_only=True)
class OpenRLHFProfiling:
    """profwin-openrlhf's settings.

    Attributes:
        rollouts: which rollouts are profiled (rollout *k*: the *k*-th ``generate_samples`` call).
        spec: the spec's mapping form, its ``output_dir`` as written (see :meth:`spec_here`).
    """

    rollouts: Rollouts
    spec: Mapping[str, Any]

    @classmethod
    def of(cls, rollouts: object, spec: object, *, timeline: bool = False) -> OpenRLHFProfiling:
        """Settings from the values, checked; a :class:`~profwin.ConfigError` names the flag at fault.
        ``timeline`` (``--profwin.timeline``) adds ``timeline`` to the spec's ``record``."""
        data = _spec_data(spec, "--profwin.spec")
        if timeline:
            recorded = data.get("record") or []
            data["record"] = [*recorded, "timeline"] if "timeline" not in recorded else list(recorded)
        return cls(rollouts=Rollouts.of(rollouts, path="--profwin.rollouts"), spec=data)

    def spec_here(self) -> ProfileSpec:
        """The spec in this process: ``output_dir`` with ``~`` and ``$VARIABLES`` resolved here."""
        data = dict(self.spec)
        data["output_dir"] = os.path.expanduser(os.path.expandvars(str(data["output_dir"])))
        return spec_from_mapping(data, path="--profwin.spec")

    def to_json(self) -> str:
        """The form :data:`ENV` carries."""
        return json.dumps({"rollouts": str(self.rollouts), "spec": dict(self.spec)})

    @classmethod
    def from_json(cls, text: str) -> OpenRLHFProfiling:
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"must be profwin-openrlhf's settings as JSON ({exc})", path=ENV) from None
        if not isinstance(data, dict) or set(data) != {"rollouts", "spec"}:
            raise ConfigError(f"must be an object with 'rollouts' and 'spec' (got {shown(data)})", path=ENV)
        return cls.of(data["rollouts"], data["spec"])

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenRLHFProfiling | None:
        """The settings in :data:`ENV`, or ``None`` when it is unset."""
        text = (os.environ if environ is None else environ).get(ENV)
        return None if not text else cls.from_json(text)


@checked
def split_argv(argv: Sequence[str]) -> tuple[OpenRLHFProfiling | None, list[str]]:
    """profwin's flags taken out of OpenRLHF's command line: the settings (``None`` when none is
    given) and the arguments left for OpenRLHF. ``--profwin.rollouts`` and ``--profwin.spec`` take a
    value, as ``--profwin.spec 2:6`` or ``--profwin.spec=2:6``; ``--profwin.timeline`` none."""
    values: dict[str, str] = {}
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
            values[flag] = "true"
            i += 1
            continue
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
    timeline = "--profwin.timeline" in values
    return OpenRLHFProfiling.of(values["--profwin.rollouts"], values["--profwin.spec"], timeline=timeline), rest
