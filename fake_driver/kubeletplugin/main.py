"""``python -m fake_driver.kubeletplugin``: the plugin process of the fake driver's DaemonSet.

    python -m fake_driver.kubeletplugin --node-name "$NODE_NAME" --fleet /etc/fake-driver/fleet.yaml

The node's pool: the fleet's entry for the node, else the pool named by the Node's
``dra-harness.io/pool`` label (kind workers are labelled by pool), else ``--pool``. On start
it publishes the node's ResourceSlices (as the node's own identity: the admission policy lets
it write only slices of its node), serves the kubelet's sockets, and runs until SIGTERM.
``--claims-file`` serves claims from a JSON file instead of the API (no cluster at all).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fake_driver.api import apilimits
from fake_driver.api.kube import as_rest, server_minor
from fake_driver.command.cliargs import OneLineParser, known_minor, node_name
from fake_driver.core.errors import FakeDriverError, cli_main
from fake_driver.core.paths import socket_problem, unwritable
from fake_driver.core.stopsignal import StopSignal
from fake_driver.fleetspec.fleet import Fleet, NodeSpec, load_fleet
from fake_driver.kubeletplugin.devicestatus import ApiStatusWriter
from fake_driver.kubeletplugin.plugin import (
    ApiClaimSource,
    ClaimSource,
    KubeletPlugin,
    StaticClaimSource,
    StatusWriter,
)
from fake_driver.kubeletplugin.server import (
    DEFAULT_PLUGINS_DIR,
    DEFAULT_REGISTRY_DIR,
    DEFAULT_SUPPORTED_VERSIONS,
    PluginServer,
    claim_sockets,
    socket_paths,
)

PROG = "fake_driver.kubeletplugin"
POOL_LABEL = "dra-harness.io/pool"
DEFAULT_CDI_ROOT = Path("/var/run/cdi")


def build_parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog=PROG, description="Kubelet DRA plugin of the fake driver.")
    ap.add_argument(
        "--node-name", type=node_name, default=os.environ.get("NODE_NAME"), help="default: $NODE_NAME"
    )
    ap.add_argument("--fleet", required=True, type=Path, help="fleet YAML file")
    ap.add_argument("--pool", help="fleet pool of this node when neither the fleet nor a node label names it")
    ap.add_argument("--minor", type=known_minor, help="API server minor, e.g. 1.37 (default: ask /version)")
    ap.add_argument("--kubeconfig", help="default: in-cluster service account, else $KUBECONFIG")
    ap.add_argument("--claims-file", type=Path, help="JSON list of ResourceClaims instead of the API")
    ap.add_argument("--registry-dir", type=Path, default=DEFAULT_REGISTRY_DIR)
    ap.add_argument("--plugins-dir", type=Path, default=DEFAULT_PLUGINS_DIR)
    ap.add_argument("--cdi-root", type=Path, default=DEFAULT_CDI_ROOT)
    ap.add_argument("--faults-file", type=Path, help="JSON faults, re-read on every call")
    ap.add_argument(
        "--supported-versions",
        default=",".join(DEFAULT_SUPPORTED_VERSIONS),
        help="GetInfo supported_versions, in preference order",
    )
    ap.add_argument(
        "--rolling-update-uid",
        type=instance_uid,
        help="this instance's UID (a DaemonSet passes its pod's UID): sockets named per instance and "
        "state shared under a file lock, so a new instance serves beside the old one "
        "(kubeletplugin RollingUpdate; kubelet >= 1.33)",
    )
    ap.add_argument("--no-publish", action="store_true", help="do not publish ResourceSlices")
    ap.add_argument(
        "--republish-interval",
        type=republish_interval,
        default=5.0,
        help=f"seconds between checks that the node's slices are still published, "
        f"{MIN_REPUBLISH:g}-{MAX_REPUBLISH:g} (0: never)",
    )
    return ap


# Each check is a request to the API server: 0.0001 s sent 2,611 requests in 10 s.
MIN_REPUBLISH, MAX_REPUBLISH = 1.0, 3600.0


def republish_interval(text: str) -> float:
    """0 (never), or seconds within [MIN_REPUBLISH, MAX_REPUBLISH]; 'inf' and 'nan' refused."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if value != 0 and not MIN_REPUBLISH <= value <= MAX_REPUBLISH:
        raise argparse.ArgumentTypeError(
            f"must be 0 (never) or {MIN_REPUBLISH:g}-{MAX_REPUBLISH:g} s, got {text!r}"
        )
    return value


def instance_uid(text: str) -> str:
    """A UID as a socket name part: letters, digits, '-' and '_' (a pod UID is a UUID)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", text):
        raise argparse.ArgumentTypeError(f"expected 1-64 letters, digits, '-' or '_', got {text!r}")
    return text


def api_client(kubeconfig: str | None) -> Any:
    from fake_driver.api.apiclient import in_cluster_api_client, new_api_client

    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_api_client()
    return new_api_client(kubeconfig)


def check_dir(flag: str, path: Path) -> None:
    """Before the server starts: a directory the plugin cannot write is one line."""
    problem = unwritable(path, directory=True)
    if problem:
        raise FakeDriverError(f"{flag} {path}: {problem}")


def check_sockets(*paths: Path) -> None:
    for path in paths:
        problem = socket_problem(path)
        if problem:
            raise FakeDriverError(problem)


def resolve_node(fleet: Fleet, name: str, label_pool: str | None, pool: str | None) -> NodeSpec:
    """The node's spec: listed in the fleet, or a node of the pool its label (or --pool) names."""
    if name in fleet.node_names:
        return fleet.node(name)
    wanted = label_pool or pool
    for p in fleet.pools:
        if p.name == wanted:
            return NodeSpec(name, dataclasses.replace(p, node_names=(name,)))
    pools = ", ".join(p.name for p in fleet.pools)
    raise FakeDriverError(
        f"node {name!r} is not in the fleet and names no pool of it "
        f"(label {POOL_LABEL}={label_pool!r}, --pool={pool!r}); pools: {pools}"
    )


def run(argv: Sequence[str] | None = None, stop: threading.Event | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.node_name:
        raise FakeDriverError("--node-name (or $NODE_NAME) is required")
    for flag, path in (
        ("--registry-dir", args.registry_dir),
        ("--plugins-dir", args.plugins_dir),
        ("--cdi-root", args.cdi_root),
    ):
        check_dir(flag, path)
    fleet = load_fleet(args.fleet)
    versions = [v for v in (s.strip() for s in args.supported_versions.split(",")) if v]
    claims: ClaimSource
    status: StatusWriter | None = None
    api: Any = None
    if args.claims_file is not None:
        claims = StaticClaimSource.from_file(args.claims_file)
        if not args.minor:
            raise FakeDriverError("--claims-file needs --minor (there is no API server to ask)")
        label_pool = None
    else:
        api = api_client(args.kubeconfig)
        claims = ApiClaimSource(api)
        status = ApiStatusWriter(api)
        node_obj = as_rest(api).get(f"/api/v1/nodes/{args.node_name}") or {}
        label_pool = (node_obj.get("metadata", {}).get("labels") or {}).get(POOL_LABEL)
    minor = args.minor or server_minor(api)
    node = resolve_node(fleet, args.node_name, label_pool, args.pool)
    driver = node.pool.personality.driver
    instance = args.rolling_update_uid or ""
    # Held until the sockets are gone: a second plugin on the same directories is refused.
    with claim_sockets(*socket_paths(args.registry_dir, args.plugins_dir, driver, instance)):
        plugin = KubeletPlugin(
            node,
            apilimits.parse_minor(minor),
            claims,
            plugin_dir=args.plugins_dir / driver,
            cdi_root=args.cdi_root,
            faults_file=args.faults_file,
            shared=bool(instance),
            status=status,
        )
        publisher = None
        if api is not None and not args.no_publish:
            from fake_driver.publishing.publisher import Publisher

            publisher = Publisher(api, Fleet((node.pool,)), minor)
            result = publisher.publish_node(node.name)
            print(f"{node.name}\t{result.action}\tgeneration={result.generation}\tslices={result.slices}")
        stopping = StopSignal(stop).install()
        with PluginServer(
            plugin,
            registry_dir=args.registry_dir,
            plugins_dir=args.plugins_dir,
            supported_versions=versions,
            instance=instance,
        ) as server:
            print(f"serving {server.dra_socket} (registration {server.registration_socket})", flush=True)
            keep_published(publisher, node.name, stopping, args.republish_interval)
    return 0


def keep_published(publisher: Any, node: str, stop: StopSignal, interval: float) -> None:
    """Until `stop`, publish the node's slices again every `interval` seconds if they changed or
    went away, as the kubeletplugin library's ResourceSlice controller does: a kubelet wipes
    its node's slices when it starts (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go), so a
    plugin that outlives a kubelet restart must put them back."""
    while not stop.wait(interval if publisher is not None and interval > 0 else None):
        try:
            result = publisher.publish_node(node)
        except Exception as err:  # an API hiccup: the next round tries again
            print(f"{node}\trepublish failed: {err}", flush=True)
            continue
        if result.action != "unchanged":
            print(
                f"{node}\t{result.action}\tgeneration={result.generation}\tslices={result.slices}", flush=True
            )


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(PROG, run, argv)
