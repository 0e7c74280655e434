"""The trainer integrations' toolkit (profwin-verl, -slime, -openrlhf, -trl, and yours).

A trainer plugin's target is a :class:`~profwin.plugin.TrainerIntegration`; around its seam it
uses :class:`RolloutSettings` (the base of each one's settings type), :class:`RolloutProfiler`
over a :class:`Rollouts` selection, with a :class:`RolloutRecord` per profiled rollout. A
trainer's configs: :func:`spec_mapping` (a spec setting given as a window's text, JSON text or a
mapping), :func:`spec_from_mapping`, and the document readers of a
:class:`~profwin.plugin.SpecFormat` (:func:`read_document`, :func:`select`, :func:`plain`).
"""

from profwin.config import spec_from_mapping as spec_from_mapping
from profwin.config import spec_mapping as spec_mapping
from profwin.documents import plain as plain
from profwin.documents import read_document as read_document
from profwin.documents import select as select
from profwin.rollouts import RolloutProfiler as RolloutProfiler
from profwin.rollouts import RolloutRecord as RolloutRecord
from profwin.rollouts import RolloutSettings as RolloutSettings
from profwin.selection import Rollouts as Rollouts

# The names above are the surface: listed once, as its imports.
__all__ = sorted(name for name in dir() if not name.startswith("_"))
