"""A loopback server that accepts connections, reads what it is sent and never answers:
the API server that hangs its clients. With a TLS context it completes the handshake first
(a server that hangs after TLS); without one, a TLS client hangs in the handshake."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import yaml


class _Silent(socketserver.BaseRequestHandler):
    server: SilentServer

    def handle(self) -> None:
        self.server.first_contact = self.server.first_contact or time.monotonic()
        self.server.peers.append(self.client_address)
        self.server.accepted.append(self.request)
        sock: socket.socket = self.request
        try:
            if self.server.tls is not None:
                sock = self.server.tls.wrap_socket(sock, server_side=True)
                self.server.accepted.append(sock)
            while sock.recv(65536):  # read everything, answer nothing
                pass
        except OSError:  # the client gave up, or teardown closed the socket
            pass


class SilentServer(socketserver.ThreadingTCPServer):
    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext | None) -> None:
        self.tls = tls
        self.peers: list[tuple[str, int]] = []  # one per connection
        self.accepted: list[socket.socket] = []  # to close at teardown
        # When the first client connected: a bound is measured from here, not from a start
        # that a loaded machine can make slow (the interpreter, imports, collection).
        self.first_contact: float | None = None
        super().__init__(("127.0.0.1", 0), _Silent)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server_address[1]}"

    def kubeconfig(self, path: Path, ca: Path | None = None) -> Path:
        """A token kubeconfig for this server: its CA if given, else no TLS verification."""
        cluster: dict[str, object] = {"server": self.url}
        cluster.update({"certificate-authority": str(ca)} if ca else {"insecure-skip-tls-verify": True})
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "silent",
                    "clusters": [{"name": "silent", "cluster": cluster}],
                    "users": [{"name": "u", "user": {"token": "abc"}}],
                    "contexts": [{"name": "silent", "context": {"cluster": "silent", "user": "u"}}],
                }
            )
        )
        return path


@contextlib.contextmanager
def silent_server(tls: ssl.SSLContext | None = None) -> Iterator[SilentServer]:
    server = SilentServer(tls)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="silent-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        for sock in server.accepted:  # ends the handlers' reads
            with contextlib.suppress(OSError):  # already closed, or handed over to TLS
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        thread.join(timeout=5)
