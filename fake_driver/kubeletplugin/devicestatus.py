"""ResourceClaim device status written by the kubelet plugin (KEP-4817,
DRAResourceClaimDeviceStatus), for a pool whose fleet entry sets ``device_status: true``.

Once a claim's devices are prepared, the plugin writes one ``status.devices`` entry per device
it prepared: driver, pool, device (and shareID for a share of a consumable-capacity device), a
``Ready`` condition ("If the device has been configured according to the class and claim config
references, the `Ready` condition should be True": k8s.io/api resource/v1 types.go
AllocatedDeviceStatus.Conditions @ v0.37.2) and ``data`` with what the container sees. No
``networkData``: the GPUs the personalities model have no network interface of their own (a NIC
driver reports it; harness/kit/devicestatus.py plays one). Upstream's test driver
writes the same entry from the kubelet plugin of the pod's node with UpdateStatus (kubernetes
test/e2e/dra/dra.go "must allow the driver to update ResourceClaim device status" and
test/e2e/dra/test-driver/app/kubeletplugin.go UpdateStatus @ v1.37.2).

Entries of other drivers and devices are kept; the update carries the claim's resourceVersion,
and a conflict (someone else wrote the claim in between) is retried on a fresh read. A write
that fails fails the claim's prepare, so the kubelet retries it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from fake_driver.api.kube import ApiError, Obj, as_rest
from fake_driver.core.errors import FakeDriverError
from fake_driver.kubeletplugin.checkpoint import PreparedDevice

CLAIM_STATUS = "/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}/status"
READY_REASON = "Prepared"
ATTEMPTS = 3  # a claim written by others this often while being prepared is a real problem


def _key(entry: Mapping[str, Any]) -> tuple[str, str, str, str]:
    # The list-map keys of ResourceClaimStatus.Devices: driver, pool, device, shareID.
    return (entry["driver"], entry["pool"], entry["device"], entry.get("shareID") or "")


def entries(
    driver: str, claim: Obj, devices: Sequence[PreparedDevice], visible: Mapping[str, str]
) -> list[Obj]:
    """One status entry per prepared device; `visible`: device name -> the ID a container sees."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    generation = int(claim.get("metadata", {}).get("generation") or 0)
    out: list[Obj] = []
    for d in devices:
        entry: Obj = {"driver": driver, "pool": d.pool, "device": d.device}
        if d.share_id:
            entry["shareID"] = d.share_id
        ready: Obj = {
            "type": "Ready",
            "status": "True",
            "reason": READY_REASON,
            "message": f"CDI devices {', '.join(d.cdi_device_ids)} written",
            "lastTransitionTime": now,
        }
        if generation:
            ready["observedGeneration"] = generation
        entry["conditions"] = [ready]
        entry["data"] = {"visibleDevice": visible.get(d.device, ""), "cdiDeviceIDs": list(d.cdi_device_ids)}
        out.append(entry)
    return out


def merged(current: Sequence[Obj], new: Sequence[Obj]) -> list[Obj]:
    """The claim's entries with `new` in place of any with the same key (others kept)."""
    replaced = {_key(e) for e in new}
    return [e for e in current if _key(e) not in replaced] + list(new)


class ApiStatusWriter:
    """Writes through the claim's status subresource (PUT, with the claim's resourceVersion)."""

    def __init__(self, api_client: Any) -> None:
        self.rest = as_rest(api_client)

    def write(
        self, driver: str, claim: Obj, devices: Sequence[PreparedDevice], visible: Mapping[str, str]
    ) -> None:
        new = entries(driver, claim, devices, visible)
        meta = claim["metadata"]
        path = CLAIM_STATUS.format(namespace=meta["namespace"], name=meta["name"])
        ref = f"{meta['namespace']}/{meta['name']}"
        for _ in range(ATTEMPTS):
            body = dict(claim)
            status = dict(claim.get("status") or {})
            status["devices"] = merged(status.get("devices") or (), new)
            body["status"] = status
            try:
                self.rest.replace(path, body)
                return
            except ApiError as err:
                if err.status != 409:
                    raise FakeDriverError(f"writing device status of ResourceClaim {ref}: {err}") from None
            fresh = self.rest.get(path)
            if fresh is None or fresh.get("metadata", {}).get("uid") != meta.get("uid"):
                raise FakeDriverError(f"ResourceClaim {ref} went away while its device status was written")
            claim = fresh
        raise FakeDriverError(f"writing device status of ResourceClaim {ref}: {ATTEMPTS} conflicts in a row")
