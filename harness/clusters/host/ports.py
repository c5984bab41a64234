"""Free loopback ports, and the ports of a local cluster's components. A port can be taken
between choosing and binding it, so callers retry a component that failed with "address
already in use" on fresh ports."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Ports:
    etcd_client: int = field(default_factory=free_port)
    etcd_peer: int = field(default_factory=free_port)
    apiserver: int = field(default_factory=free_port)
    controller_manager: int = field(default_factory=free_port)
    scheduler: int = field(default_factory=free_port)
    kwok: int = field(default_factory=free_port)
