"""A stand-in for the Sonobuoy worker's progress endpoint: POST /progress, JSON bodies kept."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def progress_endpoint() -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """(port on localhost, the updates received so far, in order)."""
    updates: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path == "/progress":
                updates.append(json.loads(body))
            self.send_response(200 if self.path == "/progress" else 404)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="progress-endpoint", daemon=True)
    thread.start()
    try:
        yield server.server_address[1], updates
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
