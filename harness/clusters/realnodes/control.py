"""Restart a real node's kubelet plugin from another process: the owner of the real nodes
serves a Unix socket, and `qualify --plugin-restart-command` runs this module's client, as a
vendor's would run `kubectl delete pod` of the plugin's DaemonSet on that node.

    python -m harness.clusters.realnodes.control SOCKET restart-plugin NODE

The plugins are the owner's child processes, so only the owner can start them again; the
client returns once the kubelet has connected to the new plugin (RealNode.restart), and exits
1 with one line when the node is unknown or the restart failed.
"""

from __future__ import annotations

import socket
import socketserver
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from pathlib import Path

from harness.clusters.realnodes.pools import RealNodes
from harness.core.errors import HarnessError

COMMAND = "restart-plugin"
MODULE = "harness.clusters.realnodes.control"  # not __name__: that is __main__ in the client
# Components die with the thread that started them (PR_SET_PDEATHSIG is per thread:
# harness.clusters.host.processes), so a restart runs on this one worker, alive as long as the
# process, never on a request's short-lived thread.
_RESTARTS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="real-node-restarts")
# Upper bound of one restart: stop, start, and the kubelet's registration (RealNode._wait).
RESTART_TIMEOUT = 180.0  # seconds


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        words = self.rfile.readline(1024).decode(errors="replace").split()
        if len(words) != 2 or words[0] != COMMAND:
            self.wfile.write(f"error: expected `{COMMAND} NODE`, got {' '.join(words)!r}\n".encode())
            return
        try:
            _RESTARTS.submit(self.server.restart, words[1]).result(timeout=RESTART_TIMEOUT)
        except (HarnessError, OSError, FutureTimeout) as err:
            self.wfile.write(f"error: {err}\n".encode())
            return
        self.wfile.write(b"ok\n")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, restart: Callable[[str], None]) -> None:
        super().__init__(path, _Handler)
        self.restart = restart


@contextmanager
def serving(restart: Callable[[str], None]) -> Iterator[list[str]]:
    """While open, a socket whose `restart-plugin NODE` calls `restart(NODE)`; yields the
    client's argv template (`{node}` for the node), for --plugin-restart-command."""
    # A short directory of its own: a Unix socket's path is at most 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="dra-ctl-"))
    path = directory / "s"
    server = _Server(str(path), restart)
    thread = threading.Thread(target=server.serve_forever, name="plugin-control", daemon=True)
    thread.start()
    try:
        yield [sys.executable, "-m", MODULE, str(path), COMMAND, "{node}"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        path.unlink(missing_ok=True)
        directory.rmdir()


def plugin_restarter(real: RealNodes) -> Callable[[str], None]:
    """`restart(NODE)` of the owner's real nodes: stop and start the node's kubelet plugin."""

    def restart(node: str) -> None:
        if node not in real.nodes:
            raise HarnessError(f"no real node {node} here (real nodes: {', '.join(sorted(real.nodes))})")
        real.node(node).restart("kubelet-plugin")

    return restart


def ask(path: str, node: str, timeout: float = RESTART_TIMEOUT + 30) -> str:
    """The owner's answer to `restart-plugin NODE`: "ok", else "error: ..."."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(path)
        conn.sendall(f"{COMMAND} {node}\n".encode())
        return conn.makefile("rb").readline(4096).decode(errors="replace").strip()


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] != COMMAND or not argv[2]:
        print(f"usage: python -m {MODULE} SOCKET {COMMAND} NODE", file=sys.stderr)
        return 2
    try:
        answer = ask(argv[0], argv[2])
    except OSError as err:  # no owner (gone, never there) or no answer in time
        answer = f"error: no answer from the real nodes' owner at {argv[0]}: {err}"
    if answer != "ok":
        print(f"restart-plugin {argv[2]}: {answer.removeprefix('error: ') or 'no answer'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
