"""How the clouds and NVIDIA's GPU operator describe a GPU node: its physical GPU count, the
sharing its device plugin applies (time-slicing, MPS) and MIG partitions advertised under the
plain resource name. The migration checks read this one view, so a GKE pool with time-sharing
gets the finding a pool labelled by GPU feature discovery gets, worded for GKE.

Sources, each convention's own documentation or code (read 2026-12):
- GKE: cloud.google.com/kubernetes-engine/docs/concepts/timesharing-gpus
  (cloud.google.com/gke-gpu-sharing-strategy TIME_SHARING or MPS, older pages time-sharing;
  cloud.google.com/gke-max-shared-clients-per-gpu), .../docs/how-to/gpus-multi
  (cloud.google.com/gke-gpu-partition-size: "Each GPU partition appears as a regular GPU
  resource", nvidia.com/gpu), .../docs/how-to/set-up-dra ("You can't use ... Time-sharing
  GPUs, Multi-instance GPUs, Multi-process Service").
- EKS: docs.aws.amazon.com/eks/latest/userguide/create-node-pool.html
  (eks.amazonaws.com/instance-gpu-count, -gpu-name, Auto Mode); device-management-nvidia-
  time-slicing (Bottlerocket's built-in plugin time-slices without GFD labels; rename-by-default
  advertises nvidia.com/gpu.shared); Karpenter: aws/karpenter-provider-aws pkg/apis/v1/labels.go
  (karpenter.k8s.aws/instance-gpu-count, -gpu-name).
- AKS: learn.microsoft.com/azure/aks/use-labels (kubernetes.azure.com/agentpool,
  kubernetes.azure.com/accelerator=nvidia); learn.microsoft.com/azure/aks/gpu-multi-instance
  (--gpu-instance-profile MIG1g..MIG7g, fixed at pool creation; single strategy: nvidia.com/gpu,
  the device plugin installed with gfd.enabled=true).
- GPU feature discovery (NVIDIA GPU operator, OpenShift, the device plugin's Helm chart):
  NVIDIA/k8s-device-plugin internal/lm/resource.go @ v0.17.4 (nvidia.com/gpu.count,
  .replicas, .sharing-strategy, .product; the product gains -SHARED when shared and
  <model>-MIG-<profile> under mig.strategy=single, where .count counts MIG devices),
  internal/lm/mig-strategy.go.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.kit.checks.detectors import quantity_int
from harness.kit.kube import Obj

GKE, EKS, KARPENTER, AKS, OPENSHIFT, GFD = (
    "GKE",
    "EKS",
    "Karpenter (AWS)",
    "AKS",
    "OpenShift",
    "GPU feature discovery",
)
CLOUDS = (GKE, EKS, AKS)  # a node is in one cloud; Karpenter (AWS) runs on EKS
# What marks a node as following a convention: label keys, or key prefixes ending in '-' or '/'.
MARKERS: Mapping[str, tuple[str, ...]] = {
    GKE: ("cloud.google.com/gke-",),
    EKS: ("eks.amazonaws.com/",),
    KARPENTER: ("karpenter.k8s.aws/",),
    AKS: ("kubernetes.azure.com/",),
    OPENSHIFT: ("node.openshift.io/os_id",),
    GFD: (
        "nvidia.com/gpu.count",
        "nvidia.com/gpu.replicas",
        "nvidia.com/gpu.product",
        "nvidia.com/gpu.present",
    ),
}
LOOKED_FOR = (
    "GKE (cloud.google.com/gke-*), EKS (eks.amazonaws.com/*), Karpenter on AWS (karpenter.k8s.aws/*), "
    "AKS (kubernetes.azure.com/*), OpenShift (node.openshift.io/os_id) and NVIDIA GPU feature "
    "discovery (nvidia.com/gpu.count, .replicas, .product, .present)"
)
GKE_SHARING = "cloud.google.com/gke-gpu-sharing-strategy"
GKE_CLIENTS = "cloud.google.com/gke-max-shared-clients-per-gpu"
GKE_PARTITION = "cloud.google.com/gke-gpu-partition-size"
GKE_DRA_DOC = "docs.cloud.google.com/kubernetes-engine/docs/how-to/set-up-dra"
# set-up-dra: "add the gke-no-default-nvidia-gpu-device-plugin=true node label to the node pool"
GKE_NO_DEVICE_PLUGIN = "gke-no-default-nvidia-gpu-device-plugin"
GPU_COUNT_LABELS = (
    "eks.amazonaws.com/instance-gpu-count",
    "karpenter.k8s.aws/instance-gpu-count",
    "cloud.google.com/gke-accelerator-count",
)
_MIG_PROFILE = re.compile(r"^(\d+)g\.\d+gb")
_GFD_MIG_PRODUCT = re.compile(r"-MIG-(\d+g\.\d+gb\S*)$")
# MIG instances of a profile one GPU holds: 7 compute slices (A100/H100: 1g x7, 2g x3, 3g x2,
# 4g x1, 7g x1; learn.microsoft.com/azure/aks/gpu-multi-instance lists the A100's).
_PER_GPU = {1: 7, 2: 3, 3: 2, 4: 1, 7: 1}


@dataclass(frozen=True)
class GpuNode:
    """One node's GPUs as its labels tell: `units` of `resource` advertised for `gpus` physical
    GPUs, because of `sharing` ("time-slicing", "MPS") or MIG `partition` under the plain name."""

    name: str
    conventions: tuple[str, ...]
    resource: str  # the name it advertises: nvidia.com/gpu or nvidia.com/gpu.shared
    units: int
    gpus: int
    sharing: str = ""
    clients: int = 1
    partition: str = ""
    how: str = ""  # the labels it was read from, for the finding

    @property
    def cloud(self) -> str:
        return next((c for c in self.conventions if c in CLOUDS), "")


def conventions_of(node: Obj) -> tuple[str, ...]:
    labels = node["metadata"].get("labels") or {}
    return tuple(
        name
        for name, marks in MARKERS.items()
        if any(k == m or k.startswith(m) for k in labels for m in marks)
    )


def per_gpu(profile: str) -> int:
    """MIG instances of `profile` one GPU holds (1 for an unknown profile: never over-counts)."""
    m = _MIG_PROFILE.match(profile)
    return _PER_GPU.get(int(m[1]), 1) if m else 1


def _advertised(node: Obj, resource: str) -> tuple[str, int]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    served = [(name, quantity_int(allocatable.get(name, 0))) for name in (resource, resource + ".shared")]
    return max(served, key=lambda s: s[1])


def _labelled_gpus(labels: Mapping[str, str]) -> tuple[int, str]:
    for key in GPU_COUNT_LABELS:
        if quantity_int(labels.get(key, 0)) > 0:
            return quantity_int(labels[key]), f"{key}={labels[key]}"
    return 0, ""


def _gke(labels: Mapping[str, str], units: int) -> dict[str, object] | None:
    partition = labels.get(GKE_PARTITION, "")
    if partition:
        return {"partition": partition, "how": f"GKE MIG partitions, {GKE_PARTITION}={partition}"}
    strategy = labels.get(GKE_SHARING, "").upper().replace("-", "_")
    clients = quantity_int(labels.get(GKE_CLIENTS, 0))
    if strategy in ("TIME_SHARING", "MPS") and clients > 1:
        sharing = "time-slicing" if strategy == "TIME_SHARING" else "MPS"
        what = "time-sharing" if strategy == "TIME_SHARING" else "MPS"
        return {"sharing": sharing, "clients": clients, "how": f"GKE {what}, {GKE_CLIENTS}={clients}"}
    return None


def _gfd(labels: Mapping[str, str], resource: str) -> dict[str, object] | None:
    product = labels.get(f"{resource}.product", "")
    mig = _GFD_MIG_PRODUCT.search(product)
    if mig and labels.get("nvidia.com/mig.strategy") == "single":
        return {"partition": mig[1], "how": f"MIG strategy single, {resource}.product={product}"}
    replicas = quantity_int(labels.get(f"{resource}.replicas", 1))
    if replicas > 1:
        strategy = labels.get(f"{resource}.sharing-strategy", "time-slicing")
        sharing = "MPS" if strategy == "mps" else "time-slicing"
        what = "device-plugin MPS" if sharing == "MPS" else "device-plugin time-slicing"
        gpus = quantity_int(labels.get(f"{resource}.count", 0))
        return {"sharing": sharing, "clients": replicas, "gpus": gpus, "how": f"{what}, {replicas} replicas"}
    return None


def gpu_node(node: Obj, resource: str) -> GpuNode | None:
    """The node's GPUs if its labels say it advertises more units than GPUs, else None."""
    labels = node["metadata"].get("labels") or {}
    conventions = conventions_of(node)
    name, units = _advertised(node, resource)
    if units <= 0:
        return None
    read = (_gke(labels, units) if GKE in conventions else None) or _gfd(labels, resource)
    counted, count_label = _labelled_gpus(labels)
    if read is None and counted and units > counted:
        # Bottlerocket's built-in plugin and others time-slice with no label of their own.
        read = {"sharing": "time-slicing", "clients": -(-units // counted), "how": f"more than {count_label}"}
    if read is None:
        return None
    partition = str(read.get("partition", ""))
    clients = int(str(read.get("clients", 1)))
    gpus = int(str(read.get("gpus", 0))) or counted
    if not gpus:
        gpus = max(-(-units // per_gpu(partition)), 1) if partition else max(units // clients, 1)
    return GpuNode(
        node["metadata"]["name"],
        conventions,
        name,
        units,
        gpus,
        str(read.get("sharing", "")),
        clients,
        partition,
        str(read["how"]),
    )


def gpu_nodes(nodes: Iterable[Obj], resource: str) -> list[GpuNode]:
    return [g for g in (gpu_node(n, resource) for n in nodes) if g is not None]


def cluster_conventions(nodes: Iterable[Obj]) -> dict[str, list[str]]:
    """Convention -> the nodes following it."""
    out: dict[str, list[str]] = {}
    for n in nodes:
        for c in conventions_of(n):
            out.setdefault(c, []).append(n["metadata"]["name"])
    return out
