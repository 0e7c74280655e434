"""A TCP forwarder on 127.0.0.1 in front of a server: the test-harness stand-in for a proxy (or a
server on another machine). profwin then cannot read who serves the URL it is given (the
listener is this test process, with no SGLang under it), as for a remote server."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _connection(client: socket.socket, port: int) -> None:
    with client, socket.create_connection(("127.0.0.1", port)) as upstream:
        back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        back.start()
        _pipe(client, upstream)
        back.join()


@contextlib.contextmanager
def forwarded(port: int) -> Iterator[str]:
    """``http://127.0.0.1:P`` forwarding every connection to ``127.0.0.1:port`` while open."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_connection, args=(client, port), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()
        thread.join(timeout=5)
