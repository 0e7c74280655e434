"""Files a plugin reads, writes and reads back (every distribution that touches files).

- reading input: :func:`open_input`, :func:`read_input` (regular files, FIFOs and pipes only,
  bounded), :func:`parse_json` (JSON within the spec bounds, never a ``RecursionError``) and
  :func:`expand_user` (``~`` and ``~user`` expanded strictly: an unknown user is a
  :class:`~profwin.plugin.ConfigError`);
- writing: :func:`atomic_path`, :func:`write_atomic` (a reader never sees half a file, a
  SIGTERM leaves none behind) and :func:`check_output_path`;
- files read back: :class:`Format` (their name and version under :data:`FORMAT_KEY`: older
  versions read, newer ones refused with the version wanted);
- an in-process profiler's window (:class:`WindowedProfile`, each step a :data:`STEP_MARKER`
  range), written in parts when it is long (``writes_parts = True``): :class:`Part`,
  :func:`part_name` and :class:`PartsMemoryError`;
- what profwin leaves in the traces it writes, for their readers (profwin-traces): the provenance
  record (the trace's :data:`PROVENANCE_KEY` and its sidecar, :func:`sidecar_path`
  (:data:`SIDECAR_SUFFIX`), both in :data:`PROVENANCE_FORMAT`), the token spans of each recorded
  step (beginning :data:`TOKENS_PREFIX`, read back by :func:`parse_step_tokens`) and the session
  timeline's layout (:data:`TIMELINE`).
"""

from profwin.atomic import atomic_path as atomic_path
from profwin.atomic import check_output_path as check_output_path
from profwin.atomic import write_atomic as write_atomic
from profwin.formats import FORMAT_KEY as FORMAT_KEY
from profwin.formats import Format as Format
from profwin.inputs import expand_user as expand_user
from profwin.inputs import open_input as open_input
from profwin.inputs import parse_json as parse_json
from profwin.inputs import read_input as read_input
from profwin.parts import Part as Part
from profwin.parts import PartsMemoryError as PartsMemoryError
from profwin.parts import part_name as part_name
from profwin.provenance import PROVENANCE_FORMAT as PROVENANCE_FORMAT
from profwin.provenance import PROVENANCE_KEY as PROVENANCE_KEY
from profwin.provenance import SIDECAR_SUFFIX as SIDECAR_SUFFIX
from profwin.provenance import sidecar_path as sidecar_path
from profwin.runtime.timeline_record import TIMELINE as TIMELINE
from profwin.runtime.tokens import TOKENS_PREFIX as TOKENS_PREFIX
from profwin.runtime.tokens import parse_step_tokens as parse_step_tokens
from profwin.torch_driver import STEP_MARKER as STEP_MARKER
from profwin.torch_driver import WindowedProfile as WindowedProfile

# The names above are the surface: listed once, as its imports.
__all__ = sorted(name for name in dir() if not name.startswith("_"))
