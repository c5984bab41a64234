"""Pod networking on a kind cluster of locally built node images, which carry no kindnetd
(its module, sigs.k8s.io/kind/images/kindnetd, is not in the kind module and the Go proxy
does not serve it): each node gets a bridge CNI config for its own podCIDR (assigned by the
controller manager) and a route to every other node's podCIDR through that node — what
kindnetd's routes do on one L2 network."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harness.core.errors import HarnessError
from harness.kit import kinds
from harness.kit.kube import Kube
from harness.kit.waits import TIMEOUTS, wait_for

CONFLIST = "/etc/cni/net.d/10-dra-harness.conflist"


def conflist(pod_cidr: str) -> str:
    """Debian's containernetworking-plugins (/opt/cni/bin in the node image)."""
    bridge = {
        "type": "bridge",
        "bridge": "cni0",
        "isGateway": True,
        "ipMasq": True,
        "hairpinMode": True,
        "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_cidr}]], "routes": [{"dst": "0.0.0.0/0"}]},
    }
    plugins = [bridge, {"type": "portmap", "capabilities": {"portMappings": True}}]
    return json.dumps({"cniVersion": "1.0.0", "name": "dra-harness", "plugins": plugins}, indent=1)


def _exec(node: str, *argv: str, stdin: str = "") -> None:
    done = subprocess.run(
        ["docker", "exec", "-i", node, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    if done.returncode != 0:
        raise HarnessError(f"docker exec {node} {' '.join(argv[:2])} failed: {done.stderr.strip()[-300:]}")


def node_networks(kube: Kube) -> dict[str, tuple[str, str]]:
    """Node name -> (InternalIP, podCIDR), once every node has a podCIDR."""

    def observe() -> dict[str, tuple[str, str]]:
        seen = {}
        for n in kube.list(*kinds.NODE):
            ip = next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
            seen[n["metadata"]["name"]] = (ip, n["spec"].get("podCIDR", ""))
        return seen

    return wait_for(
        observe,
        lambda seen: bool(seen) and all(cidr for _, cidr in seen.values()),
        timeout=TIMEOUTS.node_ready,
        describe="every kind node with a podCIDR",
    )


def wire_pod_network(kubeconfig: Path) -> dict[str, tuple[str, str]]:
    kube = Kube.from_kubeconfig(kubeconfig)
    try:
        nets = node_networks(kube)
    finally:
        kube.close()
    for node, (_, cidr) in nets.items():
        for other, (ip, other_cidr) in nets.items():
            if other != node:
                _exec(node, "ip", "route", "replace", other_cidr, "via", ip)
        _exec(node, "sh", "-c", f"cat > {CONFLIST}", stdin=conflist(cidr))
    return nets
