"""DRA state on the API server, for suites, checks and invariants alike: the ResourceSlices of
a node, the claims of a pod and what was allocated to them, waits for claims to go, and the
device status a driver's controller writes into a claim."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from harness.kit import kinds
from harness.kit.kinds import RESOURCE_V1
from harness.kit.kube import Kube, Obj
from harness.kit.waits import TIMEOUTS, wait_for

Device = tuple[str, str, str]


def node_slices(kube: Kube, node: str, driver: str = "gpu.nvidia.com") -> list[Obj]:
    """The node's slices of `driver`, in the publisher's order (counter sets first, then by
    first device name)."""
    items = kube.list(*kinds.RESOURCE_SLICE, field_selector=f"spec.nodeName={node},spec.driver={driver}")

    def key(s: Obj) -> tuple[int, str]:
        spec = s["spec"]
        if spec.get("sharedCounters"):
            return 0, spec["sharedCounters"][0]["name"]
        return 1, (spec.get("devices") or [{"name": ""}])[0]["name"]

    return sorted(items, key=key)


def device_names(slices: list[Obj]) -> list[str]:
    return [d["name"] for s in slices for d in s["spec"].get("devices") or ()]


def pools(slices: list[Obj]) -> list[Obj]:
    return [s["spec"]["pool"] for s in slices]


def devices_per_node(kube: Kube, driver: str) -> dict[str, int]:
    """Devices `driver` publishes per node, over all its slices."""
    counts: dict[str, int] = {}
    for s in kube.list(*kinds.RESOURCE_SLICE):
        spec = s["spec"]
        if spec["driver"] == driver and spec.get("nodeName"):
            counts[spec["nodeName"]] = counts.get(spec["nodeName"], 0) + len(spec.get("devices") or [])
    return counts


def claims_of(kube: Kube, namespace: str, pod_name: str, api: str = RESOURCE_V1) -> list[Obj]:
    """Claims whose controller owner is the pod (template and scheduler-created alike)."""
    return [
        c
        for c in kube.list(api, "ResourceClaim", namespace)
        if any(
            o.get("controller") and o["kind"] == "Pod" and o["name"] == pod_name
            for o in c["metadata"].get("ownerReferences") or []
        )
    ]


def wait_pod_claims_gone(kube: Kube, namespace: str, pod_name: str, why: str) -> None:
    """The claims owned by the (deleted) pod garbage-collected; `why` names the pod's story."""
    wait_for(
        lambda: [c["metadata"]["name"] for c in claims_of(kube, namespace, pod_name)],
        lambda left: left == [],
        timeout=TIMEOUTS.deletion,
        describe=f"the claims of {why} pod {pod_name} garbage-collected",
    )


def wait_claims_gone(kube: Kube, namespace: str, claim_names: list[str]) -> None:
    """These claims, by name, garbage-collected."""
    wait_for(
        lambda: sorted(
            c["metadata"]["name"]
            for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)
            if c["metadata"]["name"] in claim_names
        ),
        lambda left: left == [],
        timeout=TIMEOUTS.deletion,
        describe=f"claims {', '.join(claim_names)} garbage-collected",
    )


def recorded_claim_names(pod: Obj) -> list[str]:
    """The claims the pod's status records: resourceClaimStatuses and, for bridged extended
    resources, extendedResourceClaimStatus."""
    status = pod.get("status", {})
    names = [
        s["resourceClaimName"]
        for s in status.get("resourceClaimStatuses") or []
        if s.get("resourceClaimName")
    ]
    extended = status.get("extendedResourceClaimStatus")
    if extended:
        names.append(extended["resourceClaimName"])
    return names


def allocated_devices(claim: Obj) -> list[Obj]:
    """The claim's allocation results (request, driver, pool, device); [] when unallocated."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or [])


def allocation(kube: Kube, namespace: str, pod: str) -> list[Device]:
    """(request, pool, device) of every device allocated to the pod's only claim."""
    [claim] = claims_of(kube, namespace, pod)
    return [(r["request"], r["pool"], r["device"]) for r in allocated_devices(claim)]


def allocations(kube: Kube, namespace: str) -> dict[str, tuple[str, list[Device]]]:
    """claim name -> (uid, sorted (driver, pool, device)) for every claim of the namespace."""
    return {
        c["metadata"]["name"]: (
            c["metadata"]["uid"],
            sorted((r["driver"], r["pool"], r["device"]) for r in allocated_devices(c)),
        )
        for c in kube.list(*kinds.RESOURCE_CLAIM, namespace)
    }


def allocated(kube: Kube, namespace: str) -> list[Device]:
    """Every device allocated in the namespace, sorted."""
    return sorted(d for _, devices in allocations(kube, namespace).values() for d in devices)


# Device status.
# What a DRA driver's controller writes into a ResourceClaim's status.devices (KEP-4817,
# DRAResourceClaimDeviceStatus): per allocated device, conditions (binding conditions among
# them, KEP-5007), opaque data and networkData. Tests write it as the driver would, through the
# status subresource; the API server checks that each entry names an allocated device. The fake
# driver's kubelet plugin writes its own entries for a pool with device_status
# (fake_driver/kubeletplugin/devicestatus.py); these helpers play the writers it does not model:
# an attach controller (binding conditions) and a NIC driver (networkData).
#
# Field names: k8s.io/api resource/v1 types.go AllocatedDeviceStatus @ v0.34.4 and v0.37.2.


def condition(kind: str, status: bool, reason: str, message: str = "") -> Obj:
    """A metav1.Condition: type, status, reason and lastTransitionTime are required."""
    return {
        "type": kind,
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def device_status(
    result: Obj,
    *,
    conditions: Sequence[Obj] = (),
    data: Mapping[str, object] | None = None,
    network_data: Mapping[str, object] | None = None,
) -> Obj:
    """The status entry of one allocation result (driver, pool, device name it)."""
    entry: Obj = {"driver": result["driver"], "pool": result["pool"], "device": result["device"]}
    if conditions:
        entry["conditions"] = list(conditions)
    if data is not None:
        entry["data"] = dict(data)
    if network_data is not None:
        entry["networkData"] = dict(network_data)
    return entry


def write_device_status(kube: Kube, claim: Obj, entries: Sequence[Obj]) -> Obj:
    """Replace the claim's status.devices with `entries`, as the driver's controller does."""
    meta = claim["metadata"]
    patch = {"status": {"devices": list(entries)}}
    return kube.patch_status(*kinds.RESOURCE_CLAIM, meta["name"], patch, meta["namespace"])


def set_conditions(kube: Kube, claim: Obj, *conditions: Obj) -> Obj:
    """Every allocated device of `claim` gets `conditions` (and nothing else)."""
    return write_device_status(
        kube, claim, [device_status(r, conditions=conditions) for r in allocated_devices(claim)]
    )
