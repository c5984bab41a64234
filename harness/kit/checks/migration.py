"""Detectors for the migration failures users reported after the seed's four (issue 37):
device-plugin names no DeviceClass maps, time-slicing that a bridged pod does not get, and
nodes serving one name through the device plugin and DRA at once. Plain functions over API objects, like
harness.kit.checks.detectors: the suites stage each failure and assert what these report, and
the readiness scan runs them on any cluster it can read."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from harness.core.expectations import device_plugin_wins_where_it_advertises
from harness.kit.cel import Outcome, count_matches, published_devices
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


def detect_unmapped_legacy_requests(
    pods: Iterable[Obj],
    classes: Iterable[Obj],
    nodes: Iterable[Obj],
    pool_of: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Every extended resource name live pods request, checked against the DeviceClasses'
    extendedResourceName (and implicit names): one BLOCKING finding per name no class maps,
    naming its pods and their pools. Served by a device plugin today, the pods stay Pending
    once it leaves the pool; served by nothing, they are Pending now."""
    mapping = class_mappings(classes)
    advertised = advertised_names(nodes)
    where = pool_of or {}
    requesters: dict[str, list[str]] = {}
    for pod in _live(pods):
        meta, node = pod["metadata"], (pod.get("spec") or {}).get("nodeName")
        place = f"pool {where.get(node, node)}" if node else NOT_SCHEDULED
        for name in requested_extended_resources(pod):
            if name not in mapping:
                requesters.setdefault(name, []).append(
                    f"{meta.get('namespace', '')}/{meta['name']} ({place})"
                )
    findings = []
    for name, pods_ in sorted(requesters.items()):
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
                f"no DeviceClass maps it and {state}; {len(pods_)} pod(s) request it: {_some(sorted(pods_))}",
                _class_remedy(name),
            )
        )
    return findings


def _labels_int(node: Obj, key: str, default: int) -> int:
    value = quantity_int((node["metadata"].get("labels") or {}).get(key, default))
    return value if value > 0 else default


def _fitting(requests: list[int], gpus: int) -> int:
    """How many of these pods whole devices can hold, smallest first."""
    fit = 0
    for r in sorted(requests):
        if r > gpus:
            break
        gpus, fit = gpus - r, fit + 1
    return fit


def time_sliced_nodes(nodes: Iterable[Obj], resource: str) -> list[Obj]:
    """Nodes GPU feature discovery labels with `<resource>.replicas` > 1 (device-plugin
    time-slicing; NVIDIA/k8s-device-plugin internal/lm/resource.go @ 02f65cca replicasLabel)."""
    return [n for n in nodes if _labels_int(n, f"{resource}.replicas", 1) > 1]


def detect_time_slicing(nodes: Iterable[Obj], pods: Iterable[Obj], resource: str) -> list[Finding]:
    """Per node whose device plugin time-slices `resource`: how many it advertises beyond its
    GPUs (`<resource>.count`), and how many of the pods using them will not fit once a DRA driver
    serves the node, where a bridged pod gets whole devices (time-slicing and MPS are per claim).
    With renameByDefault the plugin advertises `<resource>.shared` instead (NVIDIA/k8s-device-plugin
    api/config/v1 DefaultSharedRename); GPU feature discovery's labels keep the plain name."""
    names = (resource, resource + SHARED_SUFFIX)
    on_node: dict[str, list[int]] = {}
    for p in _live(pods):
        node, asked = (p.get("spec") or {}).get("nodeName"), requested_extended_resources(p)
        want = sum(asked.get(name, 0) for name in names)
        if node and want:
            on_node.setdefault(node, []).append(want)
    findings = []
    for n in time_sliced_nodes(nodes, resource):
        node = n["metadata"]["name"]
        allocatable = (n.get("status") or {}).get("allocatable") or {}
        served = [(name, quantity_int(allocatable.get(name, 0))) for name in names]
        name, advertised = max(served, key=lambda s: s[1])
        if advertised <= 0:
            continue
        replicas = _labels_int(n, f"{resource}.replicas", 1)
        gpus = _labels_int(n, f"{resource}.count", max(advertised // replicas, 1))
        using = on_node.get(node, [])
        wont = len(using) - _fitting(using, gpus)
        findings.append(
            Finding(
                "time-slicing",
                Severity.BLOCKING if wont else Severity.WARNING,
                f"node/{node}",
                f"advertises {name}: {advertised} for {gpus} GPU(s) (device-plugin time-slicing, "
                f"{replicas} replicas): {advertised - gpus} over-advertised; {len(using)} pod(s) use "
                f"{sum(using)} here, {wont} will not fit once DRA serves the node (a bridged pod gets "
                "whole devices)",
                "before the move, replace the sharing: consumable capacity (DRAConsumableCapacity, a "
                "device with allowMultipleAllocations several claims share) or one ResourceClaim the "
                "pods share, with the driver's time-slicing config; else keep the pool on the device plugin",
            )
        )
    return findings


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
