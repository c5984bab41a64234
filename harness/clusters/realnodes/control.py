"""Restart a real node's kubelet plugin from another process: the owner of the real nodes
serves a Unix socket, and `qualify --plugin-restart-command` runs this module's client, as a
vendor's would run `kubectl delete pod` of the plugin's DaemonSet on that node.

    python -m harness.clusters.realnodes.control SOCKET restart-plugin NODE
    python -m harness.clusters.realnodes.control SOCKET inject-fault NODE DEVICE

The second is qualify's built-in --inject-fault-command on the harness's NVIDIA nodes: an Xid 79
(fallen off the bus, fatal) on the device in the node's NVML stand-in (nvidiafaults.inject_on),
which the plugin with its health gate on taints NoSchedule; one line when the gate is off.

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

from harness.clusters.realnodes import nvidiafaults
from harness.clusters.realnodes.pools import RealNodes
from harness.core.errors import HarnessError

COMMAND = "restart-plugin"
INJECT = "inject-fault"
INJECTED_XID = 79  # fatal: device_health.go @ v0.4.1 and v0.5.0 skip only the application Xids
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
        if len(words) == 3 and words[0] == INJECT and self.server.inject is not None:
            try:
                self.server.inject(words[1], words[2])
            except (HarnessError, OSError) as err:
                self.wfile.write(f"error: {err}\n".encode())
                return
            self.wfile.write(b"ok\n")
            return
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

    def __init__(
        self, path: str, restart: Callable[[str], None], inject: Callable[[str, str], None] | None
    ) -> None:
        super().__init__(path, _Handler)
        self.restart = restart
        self.inject = inject


@contextmanager
def serving(
    restart: Callable[[str], None], inject: Callable[[str, str], None] | None = None
) -> Iterator[list[str]]:
    """While open, a socket whose `restart-plugin NODE` calls `restart(NODE)` (and, given
    `inject`, `inject-fault NODE DEVICE` calls `inject(NODE, DEVICE)`); yields the client's argv
    template (`{node}` for the node), for --plugin-restart-command (inject_template: the other)."""
    # A short directory of its own: a Unix socket's path is at most 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="dra-ctl-"))
    path = directory / "s"
    server = _Server(str(path), restart, inject)
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


def inject_template(restart: list[str]) -> list[str]:
    """The --inject-fault-command of the socket `restart` (serving's template) talks to."""
    return [*restart[: restart.index(COMMAND)], INJECT, "{node}", "{device}"]


def fault_injector(real: RealNodes) -> Callable[[str, str], None]:
    """`inject(NODE, DEVICE)` on the owner's real NVIDIA nodes: a fatal Xid on the device."""

    def inject(node: str, device: str) -> None:
        nvidiafaults.inject_on(real, node, "xid", device, INJECTED_XID)

    return inject


def injectable(real: RealNodes) -> bool:
    """Does a node here make faults into taints (a fake NVIDIA root, its plugin's health gate on)?"""
    return any(
        n.driver_root is not None
        and n.spec.external is not None
        and bool(n.spec.external.settings.get(nvidiafaults.HEALTH_SETTING))
        for n in real.nodes.values()
    )


def ask(path: str, *words: str, timeout: float = RESTART_TIMEOUT + 30) -> str:
    """The owner's answer to `restart-plugin NODE` or `inject-fault NODE DEVICE`: "ok", else
    "error: ..."."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(path)
        conn.sendall(f"{' '.join(words)}\n".encode())
        return conn.makefile("rb").readline(4096).decode(errors="replace").strip()


def main(argv: list[str]) -> int:
    shapes = {COMMAND: 3, INJECT: 4}
    if len(argv) < 2 or shapes.get(argv[1]) != len(argv) or not all(argv[2:]):
        usage = f"SOCKET {COMMAND} NODE | SOCKET {INJECT} NODE DEVICE"
        print(f"usage: python -m {MODULE} {usage}", file=sys.stderr)
        return 2
    try:
        answer = ask(argv[0], *argv[1:])
    except OSError as err:  # no owner (gone, never there) or no answer in time
        answer = f"error: no answer from the real nodes' owner at {argv[0]}: {err}"
    if answer != "ok":
        what = " ".join(argv[1:])
        print(f"{what}: {answer.removeprefix('error: ') or 'no answer'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
