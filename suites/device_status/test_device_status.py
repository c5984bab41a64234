"""ResourceClaim device status (KEP-4817, DRAResourceClaimDeviceStatus): a driver reports per
allocated device conditions, opaque data and network data (a NIC-attached GPU's interface and
addresses) in status.devices, and the API server keeps them only for allocated devices.
Source: pkg/apis/resource/validation/validation.go validateDeviceStatus @ v1.34.4 and v1.37.2
("must be an allocated device in the claim"). Upstream counterpart: kubernetes test/e2e/dra
"must allow the driver to update ResourceClaim device status". The test plays the driver."""

from __future__ import annotations

import json

import pytest

from fixtures.fake_driver import GpuPoolSpec, MakeGpuFleet
from harness.clusters.base import Cell
from harness.core.expectations import unallocated_device_status_value
from harness.kit import builders as b
from harness.kit.drastate import allocated_devices, claims_of, condition, device_status, write_device_status
from harness.kit.kube import ApiException, Kube
from harness.kit.pods import create_claim_pod, wait_phase

NV = "gpu.nvidia.com"

pytestmark = pytest.mark.feature_gate("DRAResourceClaimDeviceStatus")


def _running_claim(kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, gpus: int) -> dict[str, object]:
    fleet = gpu_fleet(GpuPoolSpec(gpus=gpus))
    create_claim_pod(
        kube, namespace, "p", [b.exact_request("gpu", fleet.device_class(NV))], fleet.node_selector
    )
    wait_phase(kube, namespace, "p", "Running")
    [claim] = claims_of(kube, namespace, "p")
    return claim


def test_the_driver_reports_conditions_data_and_network_data_of_an_allocated_gpu(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet
) -> None:
    claim = _running_claim(kube, namespace, gpu_fleet, gpus=1)
    [result] = allocated_devices(claim)
    network = {
        "interfaceName": "ib0",
        "ips": ["10.9.8.7/24", "fd00::7/64"],
        "hardwareAddress": "b8:3f:d2:00:00:07",
    }
    entry = device_status(
        result,
        conditions=[condition("Ready", True, "Prepared", "GPU reset and attached")],
        data={"nvlinkDomain": "nvl72-0", "ibPort": 1},
        network_data=network,
    )

    write_device_status(kube, claim, [entry])

    [stored] = claims_of(kube, namespace, "p")
    [written] = stored["status"]["devices"]
    assert written == entry
    assert allocated_devices(stored) == [result]  # the allocation is untouched


def test_status_for_a_device_the_claim_was_not_allocated_is_refused(
    kube: Kube, namespace: str, gpu_fleet: MakeGpuFleet, cell: Cell
) -> None:
    claim = _running_claim(kube, namespace, gpu_fleet, gpus=2)
    [result] = allocated_devices(claim)
    other = {**result, "device": "gpu-1" if result["device"] == "gpu-0" else "gpu-0"}

    with pytest.raises(ApiException) as err:
        write_device_status(kube, claim, [device_status(other)])

    status = json.loads(err.value.body or "{}")
    assert (err.value.status, status["reason"]) == (422, "Invalid")
    [cause] = status["details"]["causes"]
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "status.devices[0]")
    value = unallocated_device_status_value(cell.number, other["driver"], other["pool"], other["device"])
    assert cause["message"] == f"Invalid value: {value}: must be an allocated device in the claim"
