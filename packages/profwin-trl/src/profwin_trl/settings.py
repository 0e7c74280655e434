"""What profwin-trl is told: :class:`TRLProfiling`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from profwin.plugin import ConfigError
from profwin.plugin.remote import normalize_url
from profwin.plugin.trainers import RolloutSettings

__all__ = ["TRLProfiling"]


def _router(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"must be a router's URL or None (got {type(value).__name__})", path="router")
    try:
        return normalize_url(value)
    except ConfigError as exc:
        raise ConfigError(exc.reason, path="router") from None


@frozen(kw_only=True)
class TRLProfiling(RolloutSettings):
    """profwin-trl's settings, checked however they are made: a bad value is a
    :class:`~profwin.ConfigError` naming the field, the value and the rule.

    Attributes:
        rollouts: which generation calls (rollout *k*: the *k*-th call of
            ``VLLMGeneration.generate`` of a trainer, from 0).
        spec: the window (``"2:6"``, ``"2:6 tokens"``) or a spec as JSON text or a mapping.
        timeout: seconds each call to an engine may take, 300 by default: a stop writes the trace
            (and vLLM's summary table) before it answers, which for a server launched to record
            more than the window, or on a busy host, takes far longer than a start.
        router: in server mode, profile the workers of this router (profwin's router mode)
            instead of the one server TRL talks to.
    """

    default_timeout: ClassVar[float] = 300.0
    router: str | None = field(default=None, converter=_router)
