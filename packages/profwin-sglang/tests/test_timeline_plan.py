"""The session timeline in SGLang plans: profwin's flag on ``start_step`` only where every
scheduler's plugin reported it records timelines; a note where not; state files keep it."""

from __future__ import annotations

from pathlib import Path

from profwin import ProfileSpec, Window
from profwin.plugin.engines import decode_timeline
from profwin_sglang.plan import check_state, plan_for
from profwin_sglang.targets import ServerInfo


def _info(timeline: object) -> ServerInfo:
    state = {"protocol": 1, "relative_base": 1 << 40, "token_windows": 1, "timeline": timeline, "profiler": "v1", "forward_ct": 3}
    return ServerInfo.parse({"version": "0.5.23", "internal_states": [{"profwin_sglang": state}, {"profwin_sglang": state}]})


def test_the_flag_rides_on_start_step_where_every_scheduler_says_it(tmp_path: Path) -> None:
    assert _info(1).timeline
    assert not _info(None).timeline
    for window in ("4:12", "4:12 tokens", "0:8", ":"):
        spec = ProfileSpec(window=Window.parse(window), output_dir=tmp_path, timeline=True)
        common = {"version": "0.5.23", "given": False, "plugin": True, "device": "cpu", "token_plugin": True}
        plain = plan_for(spec.replace(timeline=False), **common, profile_id="1764576000-0123abcd")
        flagged = plan_for(spec, **common, timeline_plugin=True, profile_id="1764576000-0123abcd")
        assert flagged.request is not None
        assert plain.request is not None
        assert decode_timeline(flagged.request["start_step"]) == (plain.request.get("start_step") or 0, True), window
        assert flagged.details["timeline"] is True
        check_state(flagged, spec)
        off = plan_for(spec, **common, timeline_plugin=False)
        assert off.request is not None
        assert off.request.get("start_step") == plain.request.get("start_step")
        assert any(n.startswith("no session timeline is recorded") for n in off.notes)
