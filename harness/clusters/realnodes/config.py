"""Configuration files of one real node: containerd, CNI, kubelet. A setting that differs from
the defaults says why next to it; every path and address is per node, so nodes on one host
never share a socket, root, CDI dir, CNI bridge or cgroup."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.clusters.host.state import CDI_DIR, KUBELET_ROOT, STATIC_CDI_DIR

# Plugins that would touch host-global paths (/var/run/nri, /opt/containerd) or are unused.
DISABLED_CONTAINERD_PLUGINS = (
    "io.containerd.nri.v1.nri",
    "io.containerd.internal.v1.opt",
    "io.containerd.snapshotter.v1.blockfile",
)


@dataclass(frozen=True)
class NodeLayout:
    """Where one node keeps everything; `state` is short (unix sockets have 108 bytes)."""

    name: str
    index: int  # within the cluster
    root: Path  # bulk: kubelet root dir, containerd root, logs
    state: Path  # sockets and containerd state
    cgroup: str  # the kubelet's cgroupRoot
    ip: str  # the node's /32 on the cluster's bridge
    pod_subnet: str
    cni_bridge: str

    @property
    def kubelet_root(self) -> Path:
        """Bind-mounted over /var/lib/kubelet in the node's mount namespace (KUBELET_ROOT)."""
        return self.state / "kubelet"

    @property
    def containerd_socket(self) -> Path:
        return self.state / "containerd.sock"

    @property
    def cdi_dir(self) -> Path:
        """Bind-mounted over /var/run/cdi in the node's mount namespace (CDI_DIR)."""
        return self.root / "cdi"

    @property
    def device_plugins(self) -> Path:
        """/var/lib/kubelet/device-plugins in the node's mount namespace."""
        return self.kubelet_root / "device-plugins"

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    def binds(self) -> dict[str, Path]:
        """Paths the kubelet, CNI, CDI and real drivers hard-code -> this node's own directory,
        in mount order. Inside the namespace every node has the standard paths, so a driver
        runs with its defaults and its socket paths stay short (a unix socket path has 108
        bytes: under the node's own root a rolling-update registration socket needs up to 118)."""
        return {
            KUBELET_ROOT: self.kubelet_root,
            "/var/log/containers": self.root / "container-logs",
            "/var/lib/cni": self.root / "cni-cache",
            CDI_DIR: self.cdi_dir,
            # No host CDI spec reaches the node's containers.
            STATIC_CDI_DIR: self.root / "cdi-static",
        }


def containerd_config(node: NodeLayout, runc: Path, cni_bin: Path, sandbox_image: str) -> str:
    cri_runtime = "plugins.'io.containerd.cri.v1.runtime'"
    lines = [
        "version = 3",
        f"root = '{node.root / 'containerd'}'",
        f"state = '{node.state / 'containerd'}'",
        f"disabled_plugins = {json.dumps(list(DISABLED_CONTAINERD_PLUGINS))}",
        "[plugins.'io.containerd.server.v1.grpc']",
        f"  address = '{node.containerd_socket}'",
        "[plugins.'io.containerd.server.v1.ttrpc']",
        f"  address = '{node.containerd_socket}.ttrpc'",
        "[plugins.'io.containerd.cri.v1.images']",
        "  snapshotter = 'overlayfs'",
        "[plugins.'io.containerd.cri.v1.images'.pinned_images]",
        f"  sandbox = '{sandbox_image}'",
        f"[{cri_runtime}]",
        "  enable_cdi = true",
        f"  cdi_spec_dirs = ['{STATIC_CDI_DIR}', '{CDI_DIR}']",
        # This VM's root lacks CAP_SYS_RESOURCE: raising oom_score_adj fails every sandbox.
        "  restrict_oom_score_adj = true",
        "  netns_mounts_under_state_dir = true",
        f"[{cri_runtime}.containerd.runtimes.runc]",
        "  runtime_type = 'io.containerd.runc.v2'",
        f"[{cri_runtime}.containerd.runtimes.runc.options]",
        f"  BinaryName = '{runc}'",
        f"[{cri_runtime}.cni]",
        f"  bin_dirs = ['{cni_bin}']",
        f"  conf_dir = '{node.root / 'cni-conf'}'",
    ]
    return "\n".join(lines) + "\n"


def cni_config(node: NodeLayout) -> str:
    """A bridge of its own per node; no gateway and no masquerade: pods need no way out, and
    the host's forwarding and NAT tables stay untouched."""
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": "dra-harness",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": node.cni_bridge,
                    "isGateway": False,
                    "ipMasq": False,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": node.pod_subnet}]],
                        "dataDir": str(node.root / "cni-ipam"),
                    },
                }
            ],
        },
        indent=2,
    )


def kubelet_config(node: NodeLayout, ca: Path, gates: Mapping[str, bool]) -> str:
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.ip,
        "healthzBindAddress": node.ip,
        "readOnlyPort": 0,
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup,
        "failCgroupV1": False,
        "oomScoreAdj": 0,  # no CAP_SYS_RESOURCE here (see containerd's restrict_oom_score_adj)
        "failSwapOn": False,
        "podLogsDir": str(node.root / "pod-logs"),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        # The host's disk is shared by everything; a test node must not evict or GC our images.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        # A failed NodePrepareResources is retried at the next resync, not after the sync
        # error backoff (pkg/kubelet/kuberuntime/kuberuntime_manager.go returns from SyncPod
        # without failing its result): 10s instead of the default 1m (+ up to 50% jitter).
        "syncFrequency": "10s",
        "featureGates": dict(gates),
    }
    return yaml.safe_dump(config, sort_keys=False)
