"""``python -m fake_driver.deviceplugin``: the legacy device plugin of the fake driver.

    python -m fake_driver.deviceplugin --node-name "$NODE_NAME" --fleet /etc/fake-driver/fleet.yaml

Registers ``nvidia.com/gpu`` (the pool's GPUs times its time_slicing_replicas) with the kubelet
and re-registers whenever the kubelet's socket is recreated (a kubelet restart forgets every
device plugin), until SIGTERM.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from fake_driver.api.kube import as_rest
from fake_driver.command.cliargs import OneLineParser, node_name, positive_float
from fake_driver.core.errors import FakeDriverError, cli_main
from fake_driver.core.stopsignal import StopSignal
from fake_driver.deviceplugin.server import (
    DEFAULT_PLUGIN_DIR,
    KUBELET_SOCKET,
    DevicePluginServer,
    socket_name,
)
from fake_driver.fleetspec.fleet import load_fleet
from fake_driver.kubeletplugin.main import POOL_LABEL, api_client, check_dir, check_sockets, resolve_node
from fake_driver.publishing.legacy import LEGACY_RESOURCE

PROG = "fake_driver.deviceplugin"


def build_parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog=PROG, description="Device plugin (nvidia.com/gpu) of the fake driver.")
    ap.add_argument(
        "--node-name", type=node_name, default=os.environ.get("NODE_NAME"), help="default: $NODE_NAME"
    )
    ap.add_argument("--fleet", required=True, type=Path, help="fleet YAML file")
    ap.add_argument("--pool", help="fleet pool of this node when neither the fleet nor a node label names it")
    ap.add_argument("--kubeconfig", help="read the node's pool label (default: in-cluster)")
    ap.add_argument("--no-api", action="store_true", help="do not read the Node; use the fleet or --pool")
    ap.add_argument("--plugin-dir", type=Path, default=DEFAULT_PLUGIN_DIR)
    ap.add_argument(
        "--recheck", type=positive_float, default=5.0, help="seconds between kubelet socket checks"
    )
    return ap


def _identity(path: Path) -> tuple[int, int] | None:
    """Inode and change time: a recreated socket can get the old inode number back."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_ctime_ns


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.node_name:
        raise FakeDriverError("--node-name (or $NODE_NAME) is required")
    check_dir("--plugin-dir", args.plugin_dir)
    check_sockets(args.plugin_dir / KUBELET_SOCKET, args.plugin_dir / socket_name(LEGACY_RESOURCE))
    fleet = load_fleet(args.fleet)
    label_pool = None
    if not args.no_api and args.node_name not in fleet.node_names:
        node_obj = as_rest(api_client(args.kubeconfig)).get(f"/api/v1/nodes/{args.node_name}") or {}
        label_pool = (node_obj.get("metadata", {}).get("labels") or {}).get(POOL_LABEL)
    node = resolve_node(fleet, args.node_name, label_pool, args.pool)
    stop = StopSignal().install()
    kubelet = args.plugin_dir / KUBELET_SOCKET
    registered: tuple[int, int] | None = None
    with DevicePluginServer(node, plugin_dir=args.plugin_dir) as server:
        print(f"serving {server.socket} with {len(server.health)} devices", flush=True)
        while not stop.is_set():
            current = _identity(kubelet)
            if current is not None and current != registered:
                if not server.socket.exists():  # the kubelet removes plugin sockets on restart
                    server.stop()
                    server.start()
                server.register(kubelet)
                registered = current
                print(f"registered {server.resource} with {kubelet}", flush=True)
            stop.wait(args.recheck)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(PROG, run, argv)
