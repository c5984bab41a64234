"""A loopback API server that misbehaves on purpose, one way per path prefix of its URL, shared
by the rows of a test process (tests/support/badinput/hostile.py) and the focused tests:

- /drip/...           answers one byte every DRIP_SECONDS: each read is within any per-read
                      timeout, the answer is never complete;
- /frozen/...         reads the request and never answers;
- /version-empty/...  /version with empty major, minor and gitVersion;
- /version-partial/... /version with a major only;
- /version-html/...   /version as an HTML page (a proxy's login page);
- /version-nested/... /version as JSON nested 100,000 deep.

Every other path answers 404 as a Status.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

DRIP_SECONDS = 0.5
# What a never-complete answer claims to be: far more than a drip delivers in any bound.
DRIP_LENGTH = 1_000_000
VERSIONS: dict[str, tuple[str, bytes]] = {
    "version-empty": ("application/json", b'{"major": "", "minor": "", "gitVersion": ""}'),
    "version-partial": ("application/json", b'{"major": "1"}'),
    "version-html": ("text/html", b"<html><body>Please log in</body></html>"),
    "version-nested": ("application/json", b"[" * 100_000 + b"]" * 100_000),
}


class _Hostile(BaseHTTPRequestHandler):
    server: HostileServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        prefix = self.path.lstrip("/").split("/")[0]
        self.server.first_contact.setdefault(prefix, time.monotonic())
        if prefix.startswith("drip"):  # drip-<anything>: a drip whose first contact is its own
            self._drip()
        elif prefix == "frozen":
            self.server.stopping.wait()
        elif prefix in VERSIONS and self.path.split("?")[0].rstrip("/").endswith("/version"):
            self._send(200, *VERSIONS[prefix])
        else:
            status = {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}
            self._send(404, "application/json", json.dumps(status).encode())

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _drip(self) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {DRIP_LENGTH}\r\n\r\n"
        answer = head.encode() + b'{"items": [' + b" " * DRIP_LENGTH
        try:
            for i in range(len(answer)):
                if self.server.stopping.wait(DRIP_SECONDS):
                    return
                self.wfile.write(answer[i : i + 1])
                self.wfile.flush()
        except OSError:  # the client gave up
            return

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


class HostileServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.first_contact: dict[str, float] = {}  # by URL prefix: when its first request came
        super().__init__(("127.0.0.1", 0), _Hostile)

    def url(self, prefix: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{prefix}"

    def kubeconfig(self, path: Path, prefix: str, user: dict[str, object] | None = None) -> Path:
        """A kubeconfig for this server's `prefix` behaviour (a token user unless given)."""
        path.write_text(kubeconfig_text(self.url(prefix), user))
        return path

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()


def kubeconfig_text(server: str, user: dict[str, object] | None = None) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": user or {"token": "sekret-token-41"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        }
    )


_server: HostileServer | None = None
_lock = threading.Lock()


def shared_server() -> HostileServer:
    """One server for the whole test process, started on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = HostileServer()
            threading.Thread(target=_server.serve_forever, args=(0.05,), daemon=True).start()
        return _server


def served_by(prefix: str, name: str = "kubeconfig") -> Callable[[Path], None]:
    """A bad-input row's setup: {tmp}/<name> points at the shared server under `prefix`."""

    def setup(tmp: Path) -> None:
        shared_server().kubeconfig(tmp / name, prefix)

    return setup
