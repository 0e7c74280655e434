"""toyserve: a stand-in engine server on 127.0.0.1 for the example backend's tests.

A fake, declared as such: no real engine is small enough to serve as the worked example of
docs/plugins.md. It keeps what matters about a real one: a step counter that runs on its own
(``POST /generate``), a per-session window, a trace directory fixed at launch, 409 when a session
is already active, and Chrome traces with one ``ProfilerStep#k`` marker per recorded step.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


class ToyEngine:
    """The engine's state behind the suite's stub HTTP server (``serve``: the ``stub_server``
    fixture), which answers every request through :meth:`answer`."""

    def __init__(self, trace_dir: Path, serve: Callable[[Callable[[Any], tuple[int, Any]]], Any], version: str = "1.2.0") -> None:
        self.trace_dir = trace_dir
        self.version = version
        self.session: dict[str, Any] | None = None
        self.files = 0
        self.lock = threading.Lock()
        self.url = serve(self.answer).url

    def generate(self, tokens: int) -> None:
        """Run ``tokens`` engine steps (one per token)."""
        with self.lock:
            for _ in range(tokens):
                session = self.session
                if session is None:
                    continue
                step = session["ran"]
                session["ran"] += 1
                end = None if session["steps"] is None else session["skip"] + session["steps"]
                if step >= session["skip"] and (end is None or step < end):
                    session["events"].append(
                        {"ph": "X", "name": f"ProfilerStep#{step}", "ts": step * 10.0, "dur": 9.0, "pid": 1, "tid": 1}
                    )

    def answer(self, request: Any) -> tuple[int, dict[str, Any]]:
        """What toyserve answers one HTTP request with: a status and a JSON body."""
        path, body = request.path, request.json()
        with self.lock:
            if path == "/version":
                return 200, {"version": self.version}
            if path == "/start_profile":
                if self.session is not None:
                    return 409, {"detail": "a profiling session is already active"}
                self.session = {**body, "ran": 0, "events": []}
                return 200, {}
            if path == "/stop_profile":
                if self.session is None:
                    return 409, {"detail": "no profiling session is active"}
                session, self.session = self.session, None
                self.files += 1
                out = self.trace_dir / f"{session['prefix']}-{self.files}.trace.json"
                out.write_text(json.dumps({"traceEvents": session["events"]}))
                return 200, {}
        return 404, {"detail": "Not Found"}
