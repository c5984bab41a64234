"""kind cluster configs generated from versions.toml, one per matrix cell.

    render_kind_config(minor, profile)  -> dict (the kind.x-k8s.io/v1alpha4 Cluster object)

What a cell's config carries:
- ``featureGates`` and ``runtimeConfig`` of the cell's gate profile (kind passes the gates to
  every component and the runtime-config to the API server);
- the CDI patch for containerd (redundant on containerd 2.x, which enables CDI by default,
  and harmless; kept for older node images);
- every node's ``image`` pinned to the minor's ``kind_image`` (never kind's own default);
- on a local node image whose kube-proxy is built with a stand-in module (1.38: the project's
  sigs.k8s.io/iptables-wrappers, which has no iptables), ``networking.kubeProxyMode: nftables``;
- workers labelled by pool (``dra-harness.io/pool``), the device-plugin pools also with
  ``dra-harness.io/device-plugin=true``, and every node with the harness's ownership labels
  (what ``cleanup`` and a person looking at ``kubectl get nodes`` go by).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from fake_driver.api.ownership import OWNER_LABEL, OWNER_VALUE
from harness.clusters.nodes import POOL_LABEL
from harness.controlplane.build import modfile_path
from harness.controlplane.gates import KnownGate
from harness.controlplane.modfile import standins_used
from harness.core.errors import HarnessError
from harness.core.versions import GateProfile, Minor

KIND_API_VERSION = "kind.x-k8s.io/v1alpha4"
CLUSTER_PREFIX = "dra-harness-"
MANAGED_LABEL = OWNER_LABEL  # one owner label for everything dra-harness makes (fake_driver.api.ownership)
MANAGED_VALUE = OWNER_VALUE
CREATED_LABEL = "dra-harness.io/created"  # unix seconds
CELL_LABEL = "dra-harness.io/cell"  # "1.37-dra-all" -> "1.37_dra-all" (label-value safe)
DEVICE_PLUGIN_LABEL = "dra-harness.io/device-plugin"
CDI_PATCH = '[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true'

# The kubelet refuses a cgroup v1 host unless told (KubeletConfiguration failCgroupV1, 1.31+).
KUBELET_CGROUP_V1_PATCH = (
    "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nfailCgroupV1: false\n"
)

# A node of a local image imports its images when containerd starts, which on a busy 2-core
# host outlasts kubeadm's default waits (kubeadm.k8s.io/v1beta4 Timeouts).
KUBEADM_TIMEOUT_PATCHES = [
    f"kind: {kind}\napiVersion: kubeadm.k8s.io/v1beta4\ntimeouts:\n{body}"
    for kind, body in (
        (
            "InitConfiguration",
            "  controlPlaneComponentHealthCheck: 10m0s\n  kubeletHealthCheck: 10m0s\n"
            "  kubernetesAPICall: 5m0s\n",
        ),
        (
            "JoinConfiguration",
            "  discovery: 10m0s\n  tlsBootstrap: 10m0s\n  kubeletHealthCheck: 10m0s\n"
            "  kubernetesAPICall: 5m0s\n",
        ),
    )
]

_IMAGE = re.compile(r"^(?P<repo>[a-z0-9./_-]+):(?P<tag>v\d+\.\d+\.\d+[0-9A-Za-z.-]*)(@sha256:[0-9a-f]{64})?$")


@dataclass(frozen=True)
class KindPoolSpec:
    """Workers of one fleet pool (pool names match the fleet in deploy/manifests)."""

    name: str
    workers: int = 1
    device_plugin: bool = False  # the legacy device plugin runs here too (double stack)


# One DRA-only worker and one worker with both stacks: enough to stage every suite's story
# (including the double-stack failure mode) on two cores.
DEFAULT_POOLS: tuple[KindPoolSpec, ...] = (
    KindPoolSpec("h100"),
    KindPoolSpec("h100-legacy", device_plugin=True),
)


# kube-proxy's modes (kind.x-k8s.io/v1alpha4 ProxyMode, sigs.k8s.io/kind@v0.33.0
# pkg/apis/config/v1alpha4/types.go); the first two need iptables.
PROXY_MODES = ("iptables", "ipvs", "nftables", "none")


def kube_proxy_standins(minor: Minor) -> list[str]:
    """The stand-in modules the minor's kube-proxy is built with (its modfile's replaces)."""
    mod = modfile_path(minor)
    return [s.module for s in standins_used(mod.read_text())] if mod.exists() else []


def kube_proxy_mode(minor: Minor, asked: str | None = None) -> str | None:
    """The kube-proxy mode of a local node image's cluster (None: kind's default, iptables).
    With a stand-in (iptables-wrappers, 1.38) nftables, the one mode that needs no iptables;
    iptables or ipvs asked for then is refused in one line (the stand-in's kube-proxy would
    stop with "iptables is not available on this host")."""
    if asked is not None and asked not in PROXY_MODES:
        raise HarnessError(f"kube-proxy mode {asked!r} is not one of {', '.join(PROXY_MODES)}")
    standins = kube_proxy_standins(minor)
    if not standins:
        return asked
    if asked in ("iptables", "ipvs"):
        raise HarnessError(
            f"kind on {minor.name} cannot run kube-proxy in {asked} mode: its kube-proxy is built with the "
            f"project's stand-in for {', '.join(standins)} (the module proxy refuses its source), which has "
            "no iptables; use nftables (the default here)"
        )
    return asked or "nftables"


def kube_proxy_fact(minor: Minor, mode: str | None) -> str:
    """What a report header says of kube-proxy: its mode and the stand-in it is built with."""
    standins = kube_proxy_standins(minor)
    built = f" ({', '.join(standins)}: the project's stand-in)" if standins else ""
    return f"{mode or 'iptables'}{built}"


def cluster_name(minor: Minor, profile: GateProfile) -> str:
    """``dra-harness-1-37-dra-all``: kind names become container and network names."""
    return f"{CLUSTER_PREFIX}{minor.name.replace('.', '-')}-{profile.name}"


def render_kind_config(
    minor: Minor,
    profile: GateProfile,
    pools: Sequence[KindPoolSpec] = DEFAULT_POOLS,
    *,
    created: int | None = None,
    local_image: str | None = None,
    proxy_mode: str | None = None,
) -> dict[str, Any]:
    """``local_image``: a node image built here (harness.clusters.kind.images): it has no kindnetd (the
    harness wires pod networking itself, harness.clusters.kind.net) and the kubelet must accept
    a cgroup v1 host. ``proxy_mode``: kube-proxy's (kube_proxy_mode), None for kind's default."""
    owned = {
        MANAGED_LABEL: MANAGED_VALUE,
        CREATED_LABEL: str(int(time.time()) if created is None else created),
        CELL_LABEL: f"{minor.name}_{profile.name}",
    }
    image = local_image or minor.kind_image
    nodes: list[dict[str, Any]] = [{"role": "control-plane", "image": image, "labels": dict(owned)}]
    for pool in pools:
        labels = {**owned, POOL_LABEL: pool.name}
        if pool.device_plugin:
            labels[DEVICE_PLUGIN_LABEL] = "true"
        nodes.extend({"role": "worker", "image": image, "labels": dict(labels)} for _ in range(pool.workers))
    config: dict[str, Any] = {"kind": "Cluster", "apiVersion": KIND_API_VERSION}
    if profile.gates:
        config["featureGates"] = dict(sorted(profile.gates.items()))
    if profile.runtime_config:
        config["runtimeConfig"] = dict(sorted(profile.runtime_config.items()))
    config["containerdConfigPatches"] = [CDI_PATCH]
    networking: dict[str, Any] = {"disableDefaultCNI": True} if local_image else {}
    if proxy_mode is not None:
        networking["kubeProxyMode"] = proxy_mode
    if networking:
        config["networking"] = networking
    if local_image:
        config["kubeadmConfigPatches"] = [KUBELET_CGROUP_V1_PATCH, *KUBEADM_TIMEOUT_PATCHES]
    config["nodes"] = nodes
    return config


def to_yaml(config: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(config), sort_keys=False, default_flow_style=False)


def config_problems(
    config: Mapping[str, Any], minor: Minor, known: Mapping[str, KnownGate] | None
) -> list[str]:
    """Everything wrong with a generated config, one line each (empty: good).

    ``known``: the gates the minor's built binary knows (None when it is not built here: the
    gate names cannot be checked then, everything else still is).
    """
    problems: list[str] = []
    gates: Mapping[str, bool] = config.get("featureGates") or {}
    if known is not None:
        for name in sorted(gates):
            gate = known.get(name)
            if gate is None:
                problems.append(f"feature gate {name} is unknown to {minor.kubernetes}")
            elif gate.locked and gate.default != gates[name]:
                problems.append(
                    f"feature gate {name} is locked to {str(gate.default).lower()} in {minor.name}"
                )
    nodes = config.get("nodes") or []
    if not any(n.get("role") == "control-plane" for n in nodes):
        problems.append("no control-plane node")
    for k, node in enumerate(nodes):
        image = node.get("image", "")
        m = _IMAGE.match(image)
        if not m:
            problems.append(f"node {k} ({node.get('role')}): image {image!r} is not pinned to a version tag")
        elif not m.group("tag").startswith(f"v{minor.name}."):
            problems.append(f"node {k}: image {image!r} is not a Kubernetes {minor.name} node image")
    return problems
