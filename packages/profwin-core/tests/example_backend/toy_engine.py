"""toyserve: a stand-in engine server on 127.0.0.1 for the example backend's tests.

A fake, declared as such: no real engine is small enough to serve as the worked example of
docs/plugins.md. It keeps what matters about a real one: a step counter that runs on its own
(``POST /generate``), a per-session window, a trace directory fixed at launch, 409 when a session
is already active, and Chrome traces with one ``ProfilerStep#k`` marker per recorded step.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class ToyEngine:
    def __init__(self, trace_dir: Path, version: str = "1.2.0") -> None:
        self.trace_dir = trace_dir
        self.version = version
        self.session: dict[str, Any] | None = None
        self.files = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ToyEngine:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

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

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
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

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else {}
                status, data = engine._answer(self.path, body)
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _reply

            def log_message(self, *args: object) -> None:
                pass

        return Handler
