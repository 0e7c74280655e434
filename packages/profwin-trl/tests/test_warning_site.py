"""A warning of ``profwin_trl.enable`` points at the line that called it (issue 39): it pointed at
profwin/arguments.py, the argument checker ``enable`` is wrapped in."""

from __future__ import annotations

import sys
import warnings


def test_a_trainer_integrations_warning_points_at_the_users_line() -> None:
    """profwin_trl.enable without TRL: one warning, at the line that called enable (it pointed at
    profwin/arguments.py, the argument checker)."""
    import profwin_trl

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        here = sys._getframe().f_lineno + 1
        assert profwin_trl.enable({"rollouts": 1, "spec": "2:6"}) == []
    (w,) = [w for w in caught if "left TRL unprofiled" in str(w.message)]
    assert (w.filename, w.lineno) == (__file__, here)
