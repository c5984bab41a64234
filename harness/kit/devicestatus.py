"""What a DRA driver's controller writes into a ResourceClaim's status.devices (KEP-4817,
DRAResourceClaimDeviceStatus): per allocated device, conditions (binding conditions among
them, KEP-5007), opaque data and networkData. Tests write it as the driver would, through the
status subresource; the API server checks that each entry names an allocated device. The fake
driver's kubelet plugin writes its own entries for a pool with device_status
(fake_driver/kubeletplugin/devicestatus.py); these helpers play the writers it does not model:
an attach controller (binding conditions) and a NIC driver (networkData).

Field names: k8s.io/api resource/v1 types.go AllocatedDeviceStatus @ v0.34.4 and v0.37.2."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from harness.kit.drastate import allocated_devices
from harness.kit.kinds import RESOURCE_V1
from harness.kit.kube import Kube, Obj


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
    return kube.patch_status(RESOURCE_V1, "ResourceClaim", meta["name"], patch, meta["namespace"])


def set_conditions(kube: Kube, claim: Obj, *conditions: Obj) -> Obj:
    """Every allocated device of `claim` gets `conditions` (and nothing else)."""
    return write_device_status(
        kube, claim, [device_status(r, conditions=conditions) for r in allocated_devices(claim)]
    )
