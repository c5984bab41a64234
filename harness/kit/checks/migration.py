"""Detectors for the migration failures users reported after the seed's four (issue 37):
device-plugin names no DeviceClass maps, time-slicing that a bridged pod does not get, and
nodes serving one name through the device plugin and DRA at once. Plain functions over API objects, like
harness.kit.checks.detectors: the suites stage each failure and assert what these report, and
the readiness scan runs them on any cluster it can read."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from harness.core.expectations import device_plugin_wins_where_it_advertises
from harness.kit.cel import Outcome, count_matches, published_devices
from harness.kit.checks.accelerators import VENDORS, AcceleratorScope
from harness.kit.checks.conventions import (
    AKS,
    CLOUDS,
    GKE,
    GKE_DRA_DOC,
    GKE_NO_DEVICE_PLUGIN,
    GpuNode,
    conventions_of,
    gpu_nodes,
)
from harness.kit.checks.detectors import (
    Finding,
    Severity,
    class_mappings,
    quantity_int,
    requested_extended_resources,
)
from harness.kit.kube import Obj

SHOWN = 5  # pods listed before "and N more"
NOT_SCHEDULED = "not scheduled"
NOT_ACCELERATOR = "not-accelerator"
TEMPLATE = " (template)"
SHARED_SUFFIX = ".shared"  # the device plugin's renameByDefault name for a time-sliced resource
# The device plugin's mixed MIG strategy names a resource per profile: nvidia.com/mig-1g.10gb.
_MIG_NAME = re.compile(r"^nvidia\.com/mig-(.+)$")


def _some(items: list[str]) -> str:
    return ", ".join(items[:SHOWN]) + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _live(pods: Iterable[Obj]) -> list[Obj]:
    """Pods that still hold or wait for devices: not finished, not on their way out."""
    return [
        p
        for p in pods
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and not p["metadata"].get("deletionTimestamp")
    ]


def advertised_names(nodes: Iterable[Obj]) -> dict[str, int]:
    """Extended resource name -> how many nodes advertise it (allocatable > 0)."""
    out: dict[str, int] = {}
    for n in nodes:
        for k, v in (((n.get("status") or {}).get("allocatable")) or {}).items():
            if "/" in k and quantity_int(v) > 0:
                out[k] = out.get(k, 0) + 1
    return out


def _class_remedy(name: str) -> str:
    fix = f"create a DeviceClass with extendedResourceName: {name} selecting the devices that serve it"
    mig = _MIG_NAME.match(name)
    if mig:
        fix += (
            f" (a MIG profile: one class per profile, selector type == 'mig' && profile == "
            f"'{mig[1]}'; the driver's chart renders none, dra-driver-nvidia-gpu#939)"
        )
    return fix + ", before the device plugin leaves the pool"


@dataclass(frozen=True)
class Workload:
    """A controller whose pod template asks for extended resources: checked like a pod, so a
    CronJob or a Deployment scaled to zero is found before its next pod stays Pending."""

    kind: str  # lower case: deployment, statefulset, daemonset, job, cronjob
    namespace: str
    name: str
    template: Obj  # the pod template: {"metadata": ..., "spec": ...}

    @property
    def subject(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def _requesters(
    pods: Iterable[Obj], workloads: Iterable[Workload], where: Mapping[str, str]
) -> dict[str, list[str]]:
    """Extended resource name -> who asks for it: live pods (with their pool) and workloads."""
    requesters: dict[str, list[str]] = {}
    for pod in _live(pods):
        meta, node = pod["metadata"], (pod.get("spec") or {}).get("nodeName")
        place = f"pool {where.get(node, node)}" if node else NOT_SCHEDULED
        for name in requested_extended_resources(pod):
            requesters.setdefault(name, []).append(f"{meta.get('namespace', '')}/{meta['name']} ({place})")
    for w in workloads:
        for name in requested_extended_resources(w.template):
            requesters.setdefault(name, []).append(f"{w.subject}{TEMPLATE}")
    return requesters


def detect_unmapped_legacy_requests(
    pods: Iterable[Obj],
    classes: Iterable[Obj],
    nodes: Iterable[Obj],
    pool_of: Mapping[str, str] | None = None,
    scope: AcceleratorScope | None = None,
    workloads: Iterable[Workload] = (),
) -> list[Finding]:
    """Every accelerator name (`scope`: by default the known vendors' names and the classes'
    own) live pods or workload templates request, checked against the DeviceClasses'
    extendedResourceName (and implicit names): one BLOCKING finding per name no class maps,
    naming who asks and where. Served by a device plugin today, the pods stay Pending once it
    leaves the pool; served by nothing, they are Pending now. Names outside the scope are one
    INFO finding: a network or storage device plugin's name is no migration risk."""
    classes = list(classes)
    mapping = class_mappings(classes)
    scope = scope or AcceleratorScope.of(classes)
    advertised = advertised_names(nodes)
    requesters = _requesters(pods, workloads, pool_of or {})
    findings = []
    for name, who in sorted(requesters.items()):
        if name in mapping or not scope.covers(name):
            continue
        served = advertised.get(name, 0)
        state = (
            f"only a device plugin serves it (on {served} node(s)): "
            "they stay Pending once it leaves their pool"
            if served
            else "no node advertises it: they cannot schedule now"
        )
        findings.append(
            Finding(
                "unmapped-legacy-resource",
                Severity.BLOCKING,
                f"extendedresource/{name}",
                f"no DeviceClass maps it and {state}; {_who(who)} request it: {_some(sorted(who))}",
                _class_remedy(name),
            )
        )
    others = sorted(n for n in requesters if n not in mapping and not scope.covers(n))
    if others:
        findings.append(not_accelerators(others, requesters))
    return findings


def _who(requesters: list[str]) -> str:
    templates = sum(r.endswith(TEMPLATE) for r in requesters)
    pods = f"{len(requesters) - templates} pod(s)"
    return f"{pods} and {templates} workload(s)" if templates else pods


def not_accelerators(names: list[str], requesters: Mapping[str, list[str]]) -> Finding:
    """One note for every requested name that is no accelerator's: bounded however many."""
    shown = [f"{n} ({len(requesters[n])} requester(s))" for n in names]
    return Finding(
        NOT_ACCELERATOR,
        Severity.INFO,
        "cluster",
        f"{len(names)} extended resource name(s) requested are not accelerators' "
        f"({', '.join(v.name.split(' (')[0] for v in VENDORS)}): not checked: {_some(shown)}",
        "--include-resource NAME checks one as an accelerator",
    )


def _fitting(requests: list[int], gpus: int) -> int:
    """How many of these pods whole devices can hold, smallest first."""
    fit = 0
    for r in sorted(requests):
        if r > gpus:
            break
        gpus, fit = gpus - r, fit + 1
    return fit


def time_sliced_nodes(nodes: Iterable[Obj], resource: str) -> list[GpuNode]:
    """Nodes whose device plugin advertises `resource` beyond their GPUs: time-slicing or MPS
    by any convention harness.kit.checks.conventions reads (GFD's replicas, GKE's sharing labels,
    a cloud's GPU count), or MIG partitions under the plain name."""
    return gpu_nodes(nodes, resource)


def _sharing_fix(node: GpuNode) -> str:
    if node.cloud == GKE:
        return (
            f"GKE's DRA set-up supports no time-sharing, MPS or multi-instance GPUs ({GKE_DRA_DOC}): keep "
            "this pool on GKE's device plugin, or move its pods to ResourceClaims first"
        )
    if node.partition:
        return (
            f"map {node.resource} to MIG devices of profile {node.partition} (a DeviceClass selecting "
            f"profile == '{node.partition}') or give the pods ResourceClaims for that profile before the "
            "move; else keep the pool on the device plugin"
            + (" (AKS fixes a pool's GPU instance profile at creation)" if node.cloud == AKS else "")
        )
    return (
        "before the move, replace the sharing: consumable capacity (DRAConsumableCapacity, a "
        "device with allowMultipleAllocations several claims share) or one ResourceClaim the "
        "pods share, with the driver's time-slicing config; else keep the pool on the device plugin"
    )


def _sharing_finding(node: GpuNode, using: list[int]) -> Finding:
    wont = len(using) - _fitting(using, node.gpus)
    where = f"{node.cloud}: " if node.cloud and not node.how.startswith(node.cloud) else ""
    what = f"MIG partitions {node.partition} under the plain name" if node.partition else "over-advertised"
    gets = "a whole GPU" if node.partition else "whole devices"
    return Finding(
        "mig-plain-name" if node.partition else "time-slicing",
        Severity.BLOCKING if wont else Severity.WARNING,
        f"node/{node.name}",
        f"advertises {node.resource}: {node.units} for {node.gpus} GPU(s) ({where}{node.how}): "
        f"{node.units - node.gpus} {what}; {len(using)} pod(s) use {sum(using)} here, {wont} will not fit "
        f"once DRA serves the node (a bridged pod gets {gets}"
        + (" unless its class selects that profile)" if node.partition else ")"),
        _sharing_fix(node),
    )


def detect_time_slicing(nodes: Iterable[Obj], pods: Iterable[Obj], resource: str) -> list[Finding]:
    """Per node whose device plugin advertises `resource` beyond its GPUs (time-slicing, MPS, MIG
    partitions under the plain name, by the node's convention): how many units it advertises
    beyond its GPUs, and how many of the pods using them will not fit once a DRA driver serves
    the node, where a bridged pod gets whole devices (time-slicing and MPS are per claim) unless
    the class mapping the name selects that MIG profile. With renameByDefault the plugin
    advertises `<resource>.shared` instead (NVIDIA/k8s-device-plugin api/config/v1
    DefaultSharedRename); GPU feature discovery's labels keep the plain name."""
    names = (resource, resource + SHARED_SUFFIX)
    on_node: dict[str, list[int]] = {}
    for p in _live(pods):
        node, asked = (p.get("spec") or {}).get("nodeName"), requested_extended_resources(p)
        want = sum(asked.get(name, 0) for name in names)
        if node and want:
            on_node.setdefault(node, []).append(want)
    return [_sharing_finding(g, on_node.get(g.name, [])) for g in gpu_nodes(nodes, resource)]


def detect_conflicting_conventions(nodes: Iterable[Obj]) -> list[Finding]:
    """Nodes labelled by two clouds at once: one warning naming the clouds and the nodes (a node
    is in one cloud; a copied node template or image carries another's labels). Pools and sharing
    are read from the first pool label and each convention's own labels."""
    torn: dict[str, list[str]] = {}
    for n in nodes:
        clouds = [c for c in conventions_of(n) if c in CLOUDS]
        if len(clouds) > 1:
            torn.setdefault(" and ".join(clouds), []).append(n["metadata"]["name"])
    if not torn:
        return []
    which = "; ".join(
        f"{both} on {len(names)} node(s): {_some(sorted(names))}" for both, names in sorted(torn.items())
    )
    return [
        Finding(
            "node-conventions",
            Severity.WARNING,
            "cluster",
            f"nodes carry the labels of two clouds at once: {which}; each finding reads the node's "
            "labels as they are, its pool from the first pool label it carries",
            "check that these nodes are what their labels say (a copied node template or image), "
            "or pass --pool-label",
        )
    ]


def detect_cloud_device_plugin_on_dra_nodes(
    nodes: Iterable[Obj], slices: Iterable[Obj], gpu_drivers: Iterable[str]
) -> list[Finding]:
    """GKE nodes whose GPUs a DRA driver publishes without the label that keeps GKE's own NVIDIA
    device plugin off them (GKE_DRA_DOC): both stacks would hand out the same GPUs."""
    drivers = set(gpu_drivers)
    dra = {
        s["spec"].get("nodeName")
        for s in slices
        if s["spec"]["driver"] in drivers and s["spec"].get("devices")
    }
    bare = sorted(
        n["metadata"]["name"]
        for n in nodes
        if n["metadata"]["name"] in dra
        and GKE in conventions_of(n)
        and (n["metadata"].get("labels") or {}).get(GKE_NO_DEVICE_PLUGIN) != "true"
    )
    return [
        Finding(
            "cloud-device-plugin",
            Severity.WARNING,
            f"node/{name}",
            f"a DRA driver publishes its GPUs but it lacks {GKE_NO_DEVICE_PLUGIN}=true: GKE runs its own "
            "NVIDIA device plugin there too, and both can hand out the same GPU",
            f"label the node pool {GKE_NO_DEVICE_PLUGIN}=true and create it with gpu-driver-version=disabled "
            f"({GKE_DRA_DOC})",
        )
        for name in bare
    ]


def detect_served_both_ways(
    nodes: Iterable[Obj], slices: Iterable[Obj], classes: Iterable[Obj], version: tuple[int, int]
) -> list[Finding]:
    """Nodes serving one extended resource name both ways: the device plugin advertises it
    (allocatable > 0) and the node publishes DRA devices a DeviceClass mapping the name selects.
    Which one serves the name's pods there is the minor's rule
    (harness.core.expectations.device_plugin_wins_where_it_advertises)."""
    devices = published_devices(slices)
    findings = []
    for c in classes:
        spec = c.get("spec") or {}
        name = spec.get("extendedResourceName")
        if not name:
            continue
        exprs = [s["cel"]["expression"] for s in spec.get("selectors") or [] if "cel" in s]
        for n in nodes:
            node = n["metadata"]["name"]
            advertised = quantity_int(((n.get("status") or {}).get("allocatable") or {}).get(name, 0))
            mine = [d for d in devices if d[1] == node]
            matched = count_matches(exprs, mine)[Outcome.MATCH] if advertised and mine else 0
            if not matched:
                continue
            findings.append(
                Finding(
                    "served-both-ways",
                    Severity.WARNING,
                    f"node/{node}",
                    f"serves {name} both ways: the device plugin advertises {advertised} and DRA publishes "
                    f"{matched} device(s) DeviceClass {c['metadata']['name']} maps to it; "
                    + _winner(version, name),
                    f"take node {node} off the device plugin (its DaemonSet's node affinity) once it moves "
                    "to DRA, or off the DRA driver while it stays: one mechanism per name on a node",
                )
            )
    return sorted(findings, key=lambda f: f.subject)


def _winner(version: tuple[int, int], name: str) -> str:
    minor = f"{version[0]}.{version[1]}"
    if device_plugin_wins_where_it_advertises(version):
        return (
            f"Kubernetes {minor} gives pods asking for {name} here the device plugin's devices and "
            "creates no claim (kubernetes#139141): the DRA devices serve only ResourceClaims"
        )
    return f"which one serves pods asking for {name} on Kubernetes {minor} is not known"
