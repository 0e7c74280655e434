"""profwin-ray's node-side and file rules need no Ray: these tests import ``profwin_ray.files``
from this checkout in the dev environment, which has no ray (it stays out of it on purpose; the
Ray cluster tests run in their cached environment, integration_tests/ray/)."""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))
