"""The progress line of the trace tools: one final 100 % line, and trim's two reads shown as
passes over the file's own size (not as one read of twice the file)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from profwin_traces import trim, tty_progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_one_final_line_however_often_the_end_is_reported() -> None:
    out = Terminal()
    progress = tty_progress("reading t.json", stream=out, min_bytes=0)
    assert progress is not None
    for done in (0, 40 << 20, 100 << 20, 100 << 20, 100 << 20):
        progress(done, 100 << 20)
    assert out.getvalue().count("\n") == 1
    assert out.getvalue().endswith("\rreading t.json: 100% (100/100 MiB)\n")


def test_trim_shows_two_passes_over_the_file_size(tmp_path: Path) -> None:
    events = [{"ph": "X", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": 10.0 * k, "dur": 5.0} for k in range(50)]
    events += [{"ph": "X", "name": "x" * 200, "pid": 1, "tid": 1, "ts": 10.0 * k + 1, "dur": 1.0} for k in range(50)]
    source = tmp_path / "t.json"
    source.write_text(json.dumps({"traceEvents": events}))
    out = Terminal()
    trim(source, "10:20", tmp_path / "cut.json", progress=tty_progress("trimming", stream=out, min_bytes=0, passes=2))
    size = source.stat().st_size >> 20
    lines = out.getvalue().split("\r")
    assert out.getvalue().count("\n") == 1
    assert lines[-1] == f"trimming: 100% (pass 2 of 2, {size}/{size} MiB)\n"
    assert any("(pass 1 of 2," in line for line in lines)
